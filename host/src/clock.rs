//! The wall clock of `std`.

use std::time::{SystemTime, UNIX_EPOCH};

use envaware::{Clock, Timestamp};

/// The host's wall clock ([`SystemTime::now`]) as an [`envaware::Clock`],
/// in whole microseconds since the Unix epoch, UTC.
///
/// It always knows the time: a time before 1970 is read as negative
/// microseconds, and one beyond what an `i64` of microseconds holds (about
/// 292,000 years from 1970) saturates. The system clock may be set back; the
/// time rule then sees a step backwards, as it would from a device's RTC.
///
/// ```
/// use envaware::{Clock, Timestamp};
/// use envaware_host::SystemClock;
///
/// let now = SystemClock.now().expect("the host knows the time");
/// assert!(now > Timestamp::from_unix_seconds(1_700_000_000)); // after November 2023
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&mut self) -> Option<Timestamp> {
        let micros = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_micros()).map_or(i64::MIN, |m| -m),
        };
        Some(Timestamp::from_unix_micros(micros))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_system_time_in_microseconds() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as i64;
        let now = SystemClock.now().unwrap().unix_micros();
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as i64;
        assert!(before <= now && now <= after, "{before} <= {now} <= {after}");
    }
}
