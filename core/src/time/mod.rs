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
//!
//! One submodule per thing of Python's it reproduces, each tested against
//! CPython's outputs in its own tests; the paths other modules use are
//! re-exported here:
//! - [`zone`]: `zoneinfo`. Which zone a name loads (or why it loads none),
//!   and the two directions between an instant and a wall clock.
//! - [`format`]: glibc's `strftime`, and the check of a configured format
//!   (its directives, its date, whether `strptime` can read it back); the
//!   default format's directives in `format`, every other in
//!   `format::custom`.
//! - [`iso`]: `_strptime` for the default format `%Y-%m-%dT%H:%M:%S`, with
//!   the numeric groups of its regex in `numeric`.
//! - [`strptime`]: `_strptime` for any format, in its three phases (match,
//!   convert the groups, resolve the date), with its regex match in
//!   `strptime::matcher` and `re`'s case tables in `strptime::unicode`.
//!
//! `format::custom` and `strptime` are compiled with the
//! `custom-time-format` feature only: without it, a configuration with any
//! other format is refused ([`TimeFormatError::NotCompiledIn`]), and a
//! device links neither.

mod civil;
mod created_at;
mod format;
mod hours;
pub(crate) mod iana;
mod iso;
mod numeric;
#[cfg(feature = "custom-time-format")]
mod strptime;
mod zone;
pub(crate) mod zone_rules;

pub use self::created_at::CreatedAt;
#[cfg(any(test, feature = "wire"))]
pub use self::format::format_time;
pub use self::format::{check_format, push_time, ParseBack, TimeFormatError};
pub(crate) use self::hours::elapsed_hours;
#[cfg(test)]
pub(crate) use self::hours::python_total_seconds;
#[cfg(test)]
pub use self::zone::zone_name_crashes_reference;
pub use self::zone::{
    fixed_offset, local_naive, local_to_timestamp, resolve_zone, zone_not_compiled_in, Zone,
};

use chrono::NaiveDateTime;

use crate::clock::Timestamp;

/// The reference's default time format.
pub const DEFAULT_TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";

/// Python's `datetime.strptime(text, fmt)`, or `None` where it raises
/// `ValueError` (and where the format makes the reference crash, see
/// [`ParseBack::ReferenceCrashes`]).
///
/// The default format through its own reader (`iso`); any other through
/// the general `strptime`, or `None` in a build without it (whose
/// configuration refuses any other format).
pub fn parse_time(text: &str, fmt: &str) -> Option<Recorded> {
    if fmt == DEFAULT_TIME_FORMAT {
        return iso::parse(text);
    }
    #[cfg(feature = "custom-time-format")]
    return strptime::parse(text, fmt);
    #[cfg(not(feature = "custom-time-format"))]
    None
}

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

#[cfg(test)]
mod tests {
    //! Expected values are CPython 3.11's own outputs (tzdata 2025.2,
    //! `LC_TIME=C`, `zoneinfo.reset_tzpath(to=[])`).
    extern crate std;

    use proptest::prelude::*;
    use std::string::String;

    use super::*;
    use crate::clock::Timestamp;
    use chrono::{Datelike, NaiveDateTime, Timelike};

    /// The zone `name` loads, UTC where it loads none.
    pub(super) fn zone(name: &str) -> Zone {
        resolve_zone(name).unwrap_or(Zone::Utc)
    }

    /// `n` as Python's `isoformat(timespec="microseconds")`.
    pub(super) fn iso(n: NaiveDateTime) -> String {
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

    /// Any zone chrono-tz has, UTC or Factory.
    pub(super) fn zone_strategy() -> impl Strategy<Value = Zone> {
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
    }
}
