//! The time dimension: whether the newest recorded time is due, as the
//! reference compares it with the clock.

use super::compiled::{TimeRule, ValidConfig};
use super::scan::{state_start, TimeHint, TimeReading};
use super::{TimeDecision, TimeSkipped, Warnings};
use crate::clock::Timestamp;
use crate::config::error::Warning;
use crate::conversation::HintText;
use crate::text::{py_strip, Joined};
use crate::time::{self, Zone};

/// Longest recorded time or zone text the rules read; a longer capture
/// cannot be a time in any supported format, nor a zone name (<= 255 bytes).
const CAPTURE_SCRATCH: usize = 256;

/// Reads a hint of ours that records a time, as the reference does before
/// comparing: the `<current-time>` capture through `strptime`, and the
/// recorded `<timezone>` for a naive time.
pub(crate) fn read_time_hint(cfg: &ValidConfig<'_>, text: HintText<'_>) -> TimeReading {
    let joined = Joined::new(text.parts());
    let strict = cfg.config.injection.strict;
    let Some((parsed, end)) = recorded_time(cfg, &joined) else { return TimeReading::Unreadable };
    // The recorded zone matters only for a naive recorded time (no %z).
    let (zone, names_configured) = match parsed.utc_offset_micros {
        Some(_) => (Zone::Utc, false),
        None => recorded_zone(cfg, &joined, end),
    };
    let zone_fell_back =
        parsed.utc_offset_micros.is_none() && !names_configured && zone == Zone::Utc;
    // Python subtracts two datetimes sharing one tzinfo object as wall-clock
    // times: ZoneInfo objects are cached per key, and every unknown name maps
    // to the one `timezone.utc`. Otherwise it subtracts UTC instants.
    // Strict mode always subtracts instants: real time across a DST change.
    let wall_clock = !strict
        && parsed.utc_offset_micros.is_none()
        && match (zone, cfg.zone) {
            (Zone::Utc, Zone::Utc) => true,
            (Zone::Utc, _) | (_, Zone::Utc) => false,
            _ => names_configured,
        };
    TimeReading::Recorded {
        micros: recorded_micros(parsed, zone, wall_clock),
        wall_clock,
        zone_fell_back,
    }
}

/// The recorded time as microseconds on the scale `now` is compared on.
/// Out of line: the zone arithmetic's frame would otherwise stay under the
/// time's capture and parse.
#[inline(never)]
fn recorded_micros(parsed: time::Recorded, zone: Zone, wall_clock: bool) -> i64 {
    if wall_clock {
        naive_micros(parsed.naive)
    } else {
        parsed.to_timestamp(zone).0
    }
}

/// The `<current-time>` capture through `strptime`, and where its
/// `</current-time>` starts. Out of line, so that its scratch and the
/// matcher's state are gone before the zone is read.
#[inline(never)]
fn recorded_time(cfg: &ValidConfig<'_>, joined: &Joined<'_>) -> Option<(time::Recorded, usize)> {
    let (start, end) = match cfg.config.injection.strict {
        true => state_start(cfg, joined)
            .and_then(|at| joined.capture_at(at, "<current-time>", "</current-time>")),
        false => joined.capture("<current-time>", "</current-time>"),
    }?;
    let parsed = match joined.slice(start, end, &mut []) {
        Some(captured) => parse_recorded(cfg, captured),
        // Across parts: copied first, in a frame of its own.
        None => parse_copied(cfg, joined, start, end),
    };
    Some((parsed?, end))
}

/// A `<current-time>` capture that spans parts, copied to a scratch and
/// parsed. Out of line, so that a capture within one part (the usual case)
/// takes no scratch.
#[inline(never)]
fn parse_copied(
    cfg: &ValidConfig<'_>,
    joined: &Joined<'_>,
    start: usize,
    end: usize,
) -> Option<time::Recorded> {
    let mut scratch = [0u8; CAPTURE_SCRATCH];
    parse_recorded(cfg, joined.slice(start, end, &mut scratch)?)
}

/// `strptime` on the stripped capture.
fn parse_recorded(cfg: &ValidConfig<'_>, captured: &str) -> Option<time::Recorded> {
    time::parse_time(py_strip(captured), cfg.config.injection.time_format)
}

/// The zone a naive recorded time is read on, and whether its name is the
/// configured one (no `<timezone>`: the configured zone). Out of line, so
/// that its scratch does not stack on the time's.
#[inline(never)]
fn recorded_zone(cfg: &ValidConfig<'_>, joined: &Joined<'_>, time_end: usize) -> (Zone, bool) {
    let configured = cfg.config.injection.timezone;
    let mut scratch = [0u8; CAPTURE_SCRATCH];
    match zone_tag(joined, cfg.config.injection.strict, time_end) {
        Some((s, e)) => match joined.slice(s, e, &mut scratch).map(py_strip) {
            Some(name) => (resolve(name), name == configured),
            // A zone tag too long to hold cannot name a zone.
            None => (Zone::Utc, false),
        },
        None => (cfg.zone, true),
    }
}

/// The recorded `<timezone>`: anywhere, as the reference reads it, or in
/// strict mode only on the line after the recorded time (`time_end` is where
/// its `</current-time>` starts), where envaware writes it.
fn zone_tag(joined: &Joined<'_>, strict: bool, time_end: usize) -> Option<(usize, usize)> {
    match strict {
        true => joined.capture_at(
            time_end.saturating_add("</current-time>\n".len()),
            "<timezone>",
            "</timezone>",
        ),
        false => joined.capture("<timezone>", "</timezone>"),
    }
}

/// `now` values (Unix microseconds) whose year is within Python's 1..=9999
/// both in UTC and on any zone's wall clock (offsets are under a day):
/// 0001-01-02T00:00Z up to, not including, 9999-12-31T00:00Z.
const SAFE_NOW: core::ops::Range<i64> =
    (-62_135_596_800 + 86_400) * 1_000_000..(253_402_300_800 - 86_400) * 1_000_000;

/// The clock's reading as the time rule compares it: the instant, and its
/// wall clock on the configured zone (microseconds of the wall time read as
/// UTC) when it was known without a zone table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    at: Timestamp,
    pub(crate) wall: Option<i64>,
}

/// Decides the time dimension from the newest recorded time: whether it is
/// due at `now`. Out of line: its 128-bit arithmetic would otherwise widen
/// the frame that stays under the recorded time's reading.
#[inline(never)]
fn time_due(
    cfg: &ValidConfig<'_>,
    now: Now,
    reading: TimeReading,
    warnings: &mut Warnings,
) -> bool {
    let TimeReading::Recorded { micros, wall_clock, zone_fell_back } = reading else { return true };
    if zone_fell_back {
        warnings.insert(Warning::RecordedTimezoneFellBackToUtc);
    }
    let now_micros = match (wall_clock, now.wall) {
        (false, _) => now.at.0,
        (true, Some(wall)) => wall,
        (true, None) => wall_clock_micros(cfg, now.at),
    };
    !cfg.time_rule.not_due(now_micros, micros, cfg.config.injection.time_interval)
}

/// `now` on `zone`'s wall clock, when Python's `datetime.now(zone)` can
/// hold it: years 1..=9999, both in UTC and in the zone.
/// Out of line: chrono's frame would otherwise stay under the whole scan.
#[inline(never)]
fn python_local(now: Timestamp, zone: Zone) -> Option<chrono::NaiveDateTime> {
    use chrono::Datelike;
    let in_range = |naive: &chrono::NaiveDateTime| (1..=9999).contains(&naive.year());
    let local = time::local_naive(now, zone);
    (in_range(&local) && (zone == Zone::Utc || in_range(&time::local_naive(now, Zone::Utc))))
        .then_some(local)
}

/// `now` as the time rule compares it, `None` where Python cannot hold it:
/// far from years 1 and 9999 the range needs no calendar, and a fixed
/// offset gives the wall clock; otherwise through chrono and the zone.
fn python_now(rule: &TimeRule, now: Timestamp, zone: Zone) -> Option<Now> {
    if SAFE_NOW.contains(&now.0) {
        return Some(Now { at: now, wall: rule.fixed_offset_micros.map(|off| now.0 + off) });
    }
    python_local(now, zone).map(|local| Now { at: now, wall: Some(naive_micros(local)) })
}

/// `now` on the configured zone's wall clock, as microseconds of a wall
/// time read as UTC: what a recorded time or a `created_at` with no offset
/// is compared with. Out of line: chrono's frame stays here.
#[inline(never)]
pub(crate) fn wall_clock_micros(cfg: &ValidConfig<'_>, now: Timestamp) -> i64 {
    naive_micros(time::local_naive(now, cfg.zone))
}

/// Microseconds of a wall time read as UTC: the arithmetic Python does on
/// two datetimes that share a tzinfo.
fn naive_micros(naive: chrono::NaiveDateTime) -> i64 {
    naive.and_utc().timestamp_micros()
}

fn resolve(name: &str) -> Zone {
    time::resolve_zone(name).unwrap_or(Zone::Utc)
}

/// The clock's reading, as the time rule starts from it: the decision when
/// no recorded time says otherwise (no recorded time, first reply or after
/// a compression: inject), and `now` as the rule compares it when it can.
pub(crate) fn clock_reading(
    cfg: &ValidConfig<'_>,
    now: Option<Timestamp>,
) -> (TimeDecision, Option<Now>) {
    match now {
        None => (TimeDecision::Skipped(TimeSkipped::ClockUnset), None),
        Some(now) => match python_now(&cfg.time_rule, now, cfg.zone) {
            None => (TimeDecision::Skipped(TimeSkipped::OutOfRange), None),
            Some(reading) => (TimeDecision::Inject(now), Some(reading)),
        },
    }
}

/// Whether the time is due at `now` against the newest recorded time
/// `hint`, read now if it was not read before.
pub(crate) fn time_hint_due(
    cfg: &ValidConfig<'_>,
    now: Now,
    hint: TimeHint<'_>,
    warnings: &mut Warnings,
) -> bool {
    let reading = match hint {
        TimeHint::Text(text) => read_time_hint(cfg, text),
        TimeHint::Read(reading) => reading,
    };
    time_due(cfg, now, reading, warnings)
}
