//! The watch configuration (envaware's own, off by default): which live
//! fields are watched, and how far a reading may move before a hint is
//! injected by itself (the rule that fires is `rules::watch`).
//!
//! `injection_config.watch` names live fields; each [`Watch`] says how far
//! the reading may move from what the context last told the agent before a
//! hint is injected. The rule, exactly:
//!
//! - a reading's value `v` is the leading decimal number of its text after
//!   leading ASCII whitespace, `[+-]?[0-9]+(\.[0-9]+)?` ([`Decimal::leading`]);
//! - the told value `t` is the leading decimal number of the `<field>…</field>`
//!   content in the newest hint of ours holding that tag, found as the time
//!   dimension finds its recorded time (`rules::scan::told_in`);
//! - the watch fires when `v` exists and `t` does not, or when the change,
//!   `above` or `below` condition holds ([`Watch::fires`]).
//!
//! Arithmetic is exact decimal, on a fixed point of 18 fractional digits in
//! an `i128`: a number with more than [`Decimal::INTEGER_DIGITS`] integer
//! digits or a non-zero digit past the 18th fractional one does not fit,
//! and reads as no number (a reading that is then never compared; a told
//! value that is then "nothing told").

use core::fmt;

use super::ZoneName;

/// The most watches a configuration may hold (the tracker keeps one told
/// value per watch, and a [`WatchSet`](crate::WatchSet) one bit).
pub const MAX_WATCHES: usize = 4;

/// The longest watched field name, in bytes (the tags are built on the
/// stack when a hint is read back).
pub const MAX_WATCH_NAME: usize = 32;

/// An exact decimal number: a fixed point of 18 fractional digits, at most
/// 19 integer digits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Decimal(i128);

/// 10^18: one unit of [`Decimal`].
const ONE: i128 = 1_000_000_000_000_000_000;
/// 10^19: integer parts stay below it.
const WHOLE_LIMIT: u64 = 10_000_000_000_000_000_000;

impl Decimal {
    /// The value in units of 10^-18 (the log header hashes it).
    #[cfg(feature = "journal")]
    pub(crate) fn units(self) -> i128 {
        self.0
    }

    /// Zero.
    pub const ZERO: Decimal = Decimal(0);
    /// Integer digits a decimal may hold.
    pub const INTEGER_DIGITS: u32 = 19;
    /// Fractional digits a decimal may hold.
    pub const FRACTION_DIGITS: u32 = 18;

    /// `mantissa × 10^-scale` (`Decimal::new(285, 1)` is 28.5); `None` when
    /// `scale` is over 18.
    pub const fn new(mantissa: i64, scale: u32) -> Option<Decimal> {
        if scale > Self::FRACTION_DIGITS {
            return None;
        }
        Some(Decimal(mantissa as i128 * 10i128.pow(Self::FRACTION_DIGITS - scale)))
    }

    /// The leading decimal number of `bytes` after leading ASCII whitespace
    /// (`' '`, `\t`, `\n`, `\x0c`, `\r`): `[+-]?[0-9]+(\.[0-9]+)?`, with the
    /// number of bytes it took (whitespace included). `None` when there is
    /// none, or it does not fit.
    pub fn leading(bytes: impl IntoIterator<Item = u8>) -> Option<(Decimal, usize)> {
        let (parts, taken) = Parts::leading(bytes)?;
        Some((parts.decimal(), taken))
    }

    /// A whole text that is one decimal number, `[+-]?[0-9]+(\.[0-9]+)?`,
    /// optionally with an exponent `[eE][+-]?[0-9]+` (a JSON number);
    /// `None` otherwise or when it does not fit.
    pub fn parse(text: &str) -> Option<Decimal> {
        let (number, exponent) = crate::text::split_exponent(text)?;
        let (mut value, taken) = Parts::leading(number.bytes())?;
        if taken != number.len() || number.as_bytes().first().is_some_and(u8::is_ascii_whitespace) {
            return None;
        }
        let Some((negative, digits)) = exponent else { return Some(value.decimal()) };
        // Parsed as a u64, as the loader's integers are: one parser linked.
        // Zero stays zero at any exponent; otherwise one shift past 10^37
        // either way cannot fit.
        let shift = digits.parse::<u64>().unwrap_or(u64::MAX);
        // Each step either fits or returns: 38 steps exhaust any value.
        for _ in 0..shift.min(40) {
            value = match negative {
                true => value.tenth()?,
                false => value.times_ten()?,
            };
        }
        Some(value.decimal())
    }

    /// Whether the number is above zero.
    pub fn is_positive(&self) -> bool {
        self.0 > 0
    }

    /// Whether the number is below zero.
    pub fn is_negative(&self) -> bool {
        self.0 < 0
    }

    /// `|self − other|`, exactly (both below 10^19, so it fits).
    fn distance(self, other: Decimal) -> Decimal {
        Decimal(self.0.abs_diff(other.0).try_into().unwrap_or(i128::MAX))
    }

    fn plus(self, other: Decimal) -> Decimal {
        Decimal(self.0.saturating_add(other.0))
    }

    fn minus(self, other: Decimal) -> Decimal {
        Decimal(self.0.saturating_sub(other.0))
    }
}

/// A decimal as its sign, integer part (below 10^19) and 18 fractional
/// digits: parsed and shifted by powers of ten in `u64`s, so a device is
/// spared 128-bit division.
#[derive(Clone, Copy)]
struct Parts {
    negative: bool,
    whole: u64,
    fraction: u64,
}

/// 10^17: the first fractional digit's weight in [`Parts::fraction`].
const TENTH: u64 = 100_000_000_000_000_000;

impl Parts {
    /// What [`Decimal::leading`] reads.
    fn leading(bytes: impl IntoIterator<Item = u8>) -> Option<(Parts, usize)> {
        // One byte of lookahead, by hand: `Peekable::next_if` asserts.
        let mut it = bytes.into_iter();
        let mut next = it.next();
        let mut taken = 0;
        while next.is_some_and(|b| b.is_ascii_whitespace()) {
            (next, taken) = (it.next(), taken + 1);
        }
        let negative = next == Some(b'-');
        if matches!(next, Some(b'+' | b'-')) {
            (next, taken) = (it.next(), taken + 1);
        }
        // In u64s, not i128s: 19 integer and 18 fractional digits fit, and a
        // device is spared 128-bit division.
        let (mut whole, mut digits, mut fits) = (0u64, 0usize, true);
        while let Some(d) = next.filter(u8::is_ascii_digit) {
            (next, taken, digits) = (it.next(), taken + 1, digits + 1);
            // Below 10^19 after the digit exactly when below 10^18 before.
            match whole < WHOLE_LIMIT / 10 {
                true => whole = whole * 10 + u64::from(d - b'0'),
                false => fits = false,
            }
        }
        if digits == 0 {
            return None;
        }
        let (mut fraction, mut places) = (0u64, 0u32);
        if next == Some(b'.') {
            next = it.next();
            let mut count = 0;
            while let Some(d) = next.filter(u8::is_ascii_digit) {
                (next, count) = (it.next(), count + 1);
                if places < Decimal::FRACTION_DIGITS {
                    (fraction, places) = (fraction * 10 + u64::from(d - b'0'), places + 1);
                } else if d != b'0' {
                    fits = false; // past the 18th digit only zeros fit
                }
            }
            // "27." is 27: the dot is not part of the number.
            if count > 0 {
                taken += 1 + count;
            }
        }
        if !fits {
            return None;
        }
        for _ in places..Decimal::FRACTION_DIGITS {
            fraction *= 10; // stays below 10^18
        }
        Some((Parts { negative, whole, fraction }, taken))
    }

    fn decimal(self) -> Decimal {
        let units = i128::from(self.whole) * ONE + i128::from(self.fraction);
        Decimal(if self.negative { -units } else { units })
    }

    /// Ten times the number, if it stays below 10^19.
    fn times_ten(self) -> Option<Parts> {
        // The carried digit is at most 9: below 10^19 exactly when the
        // whole part was below 10^18.
        let whole =
            (self.whole < WHOLE_LIMIT / 10).then(|| self.whole * 10 + self.fraction / TENTH)?;
        Some(Parts { whole, fraction: self.fraction % TENTH * 10, ..self })
    }

    /// A tenth of the number, if that is exact in 18 fractional digits.
    fn tenth(self) -> Option<Parts> {
        let fraction = self
            .fraction
            .is_multiple_of(10)
            .then_some(self.fraction / 10 + self.whole % 10 * TENTH)?;
        Some(Parts { whole: self.whole / 10, fraction, ..self })
    }
}

impl fmt::Display for Decimal {
    /// The shortest exact text: `-1`, `27.75`, `0.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let magnitude = self.0.unsigned_abs();
        let one = ONE.unsigned_abs();
        if self.0 < 0 {
            f.write_str("-")?;
        }
        // Both parts fit a u64 (below 10^19 and 10^18): formatted as u64,
        // not u128, whose formatting costs a device kilobytes of flash.
        let (whole, fraction) = (magnitude / one, magnitude % one);
        write!(f, "{}", u64::try_from(whole).unwrap_or(u64::MAX))?;
        let mut fraction = u64::try_from(fraction).unwrap_or(0);
        if fraction == 0 {
            return Ok(());
        }
        let mut width = Self::FRACTION_DIGITS;
        while fraction.is_multiple_of(10) {
            fraction /= 10;
            width = width.saturating_sub(1);
        }
        // The leading zeros by hand: a `{:0width$}` brings a panic site of
        // core's padding into a device image (`cargo xtask nopanic`).
        f.write_str(".")?;
        let digits = fraction.checked_ilog10().map_or(1, |d| d + 1);
        (digits..width).try_for_each(|_| f.write_str("0"))?;
        write!(f, "{fraction}")
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Decimal {
    fn format(&self, f: defmt::Formatter<'_>) {
        let mut text: heapless::String<48> = heapless::String::new();
        let _ = fmt::Write::write_fmt(&mut text, format_args!("{self}"));
        defmt::write!(f, "{=str}", text.as_str())
    }
}

/// A time rule's interval: whole microseconds, above 0 and at most 10^9
/// seconds (`min_interval`, `max_interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Interval(i64);

impl Interval {
    /// The longest interval: 10^9 seconds.
    pub const MAX: Interval = Interval(1_000_000_000 * 1_000_000);

    /// `micros` microseconds; `None` unless `0 < micros <= 10^15`.
    pub const fn from_micros(micros: i64) -> Option<Interval> {
        if micros > 0 && micros <= Self::MAX.0 {
            Some(Interval(micros))
        } else {
            None
        }
    }

    /// `seconds` whole seconds; `None` unless `0 < seconds <= 10^9`.
    pub const fn from_secs(seconds: i64) -> Option<Interval> {
        Self::from_micros(seconds.saturating_mul(1_000_000))
    }

    /// A decimal number of seconds, exact to the microsecond; `None` when
    /// it is out of range or has a non-zero digit past the sixth
    /// fractional one.
    pub fn from_seconds(seconds: Decimal) -> Option<Interval> {
        // 10^12 units of 10^-18 are one microsecond.
        const MICRO: i128 = ONE / 1_000_000;
        let units = seconds.0;
        if units % MICRO != 0 {
            return None;
        }
        Self::from_micros(i64::try_from(units / MICRO).ok()?)
    }

    /// The interval in microseconds.
    pub const fn micros(self) -> i64 {
        self.0
    }
}

impl fmt::Display for Interval {
    /// In seconds, the shortest exact text: `1800`, `0.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Decimal(i128::from(self.0) * (ONE / 1_000_000)).fmt(f)
    }
}

/// One watched field's conditions. At least one of `change`, `above`,
/// `below`, `min_interval`, `max_interval` is set (checked by
/// [`Config::validate`](crate::Config::validate)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Watch {
    /// Fires when the reading is at least this far from the told value (> 0).
    pub change: Option<Decimal>,
    /// Fires when the reading crosses above this, and again when it comes
    /// back to `above − hysteresis` or below.
    pub above: Option<Decimal>,
    /// Fires when the reading crosses below this, and again when it comes
    /// back to `below + hysteresis` or above.
    pub below: Option<Decimal>,
    /// The band a crossing back must clear (>= 0).
    pub hysteresis: Decimal,
    /// The floor: a value change sooner than this after the telling is
    /// held back (*throttled*) until the interval has passed.
    pub min_interval: Option<Interval>,
    /// The heartbeat: the field is told again once the telling is this old,
    /// or its age is unknown, even when the reading is steady.
    pub max_interval: Option<Interval>,
}

/// Why a watch fired, or did not ([`Watch::fires`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WatchFire {
    /// It did not fire.
    Quiet,
    /// The reading moved from the told value (or nothing was told).
    Value,
    /// `max_interval`: the telling is that old, or its age is unknown.
    Heartbeat,
    /// The reading moved, but the telling is younger than `min_interval`:
    /// held back, not fired.
    Throttled,
}

impl WatchFire {
    /// Whether the watch fired (by value or heartbeat).
    pub fn fired(self) -> bool {
        matches!(self, WatchFire::Value | WatchFire::Heartbeat)
    }
}

impl Watch {
    /// Why a watch with these conditions fires, or not, for `reading`
    /// (`v`), given `told` (`t`, `None` when nothing was told) and the
    /// `age` of the telling in microseconds (`None`: unknown, as with no
    /// telling): the one comparison the full scan and the tracker both make.
    ///
    /// ```
    /// use envaware::{Decimal, Interval, Watch, WatchFire};
    ///
    /// let minute = 60_000_000;
    /// let w = Watch {
    ///     change: Decimal::new(1, 0),
    ///     min_interval: Interval::from_secs(60),
    ///     max_interval: Interval::from_secs(1800),
    ///     ..Default::default()
    /// };
    /// let (v, t) = (Decimal::new(25, 0), Decimal::new(23, 0));
    /// assert_eq!(w.fires(v, t, Some(minute / 2)), WatchFire::Throttled);
    /// assert_eq!(w.fires(v, t, Some(minute)), WatchFire::Value);
    /// assert_eq!(w.fires(t, t, Some(10 * minute)), WatchFire::Quiet);
    /// assert_eq!(w.fires(t, t, Some(30 * minute)), WatchFire::Heartbeat);
    /// assert_eq!(w.fires(t, t, None), WatchFire::Heartbeat);
    /// assert_eq!(w.fires(None, t, None), WatchFire::Quiet); // unavailable
    /// ```
    pub fn fires(
        &self,
        reading: Option<Decimal>,
        told: Option<Decimal>,
        age: Option<i64>,
    ) -> WatchFire {
        let Some(v) = reading else { return WatchFire::Quiet }; // unavailable never fires
        let moved = match told {
            None => true,
            Some(t) => {
                let changed = self.change.is_some_and(|c| v.distance(t) >= c);
                let h = self.hysteresis;
                let above =
                    self.above.is_some_and(|a| (t <= a && a < v) || (t > a && v <= a.minus(h)));
                let below =
                    self.below.is_some_and(|b| (t >= b && b > v) || (t < b && v >= b.plus(h)));
                changed || above || below
            }
        };
        // Known and younger than the interval.
        let younger = |i: Option<Interval>| i.is_some_and(|i| age.is_some_and(|a| a < i.0));
        let throttled = moved && younger(self.min_interval);
        if moved && !throttled {
            WatchFire::Value
        } else if self.max_interval.is_some() && !younger(self.max_interval) {
            WatchFire::Heartbeat
        } else if throttled {
            WatchFire::Throttled
        } else {
            WatchFire::Quiet
        }
    }

    /// Whether the watch has a time rule (only then does its decision read
    /// the telling's age).
    pub fn has_time_rule(&self) -> bool {
        self.min_interval.is_some() || self.max_interval.is_some()
    }
}

/// The watches of a configuration, in order: each a field name and its
/// conditions. Borrowed pairs, or spans into a text arena (as the JSON
/// loader stores them).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WatchList<'a> {
    /// Plain borrowed pairs.
    Slice(&'a [(&'a str, Watch)]),
    /// Names as spans into `text`.
    Spans {
        /// The arena.
        text: &'a str,
        /// One `(name, watch)` per watch.
        spans: &'a [(crate::config::Span, Watch)],
    },
}

impl<'a> WatchList<'a> {
    /// No watch: the reference's behaviour.
    pub const EMPTY: WatchList<'static> = WatchList::Slice(&[]);

    /// How many watches.
    pub fn len(&self) -> usize {
        match self {
            WatchList::Slice(s) => s.len(),
            WatchList::Spans { spans, .. } => spans.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Watch `i`, as `(field name, conditions)`.
    pub fn get(&self, i: usize) -> Option<(&'a str, Watch)> {
        match *self {
            WatchList::Slice(s) => s.get(i).copied(),
            WatchList::Spans { text, spans } => spans.get(i).map(|(name, w)| (name.of(text), *w)),
        }
    }

    /// The watches, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, Watch)> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

/// Which value of a watch an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WatchParam {
    /// `change`.
    Change,
    /// `above`.
    Above,
    /// `below`.
    Below,
    /// `hysteresis`.
    Hysteresis,
    /// `min_interval`.
    MinInterval,
    /// `max_interval`.
    MaxInterval,
}

impl WatchParam {
    /// Every value, in the order the JSON loader reads keys.
    pub(crate) const ALL: [WatchParam; 6] = [
        WatchParam::Change,
        WatchParam::Above,
        WatchParam::Below,
        WatchParam::Hysteresis,
        WatchParam::MinInterval,
        WatchParam::MaxInterval,
    ];

    /// The value's JSON key.
    pub fn key(self) -> &'static str {
        match self {
            WatchParam::Change => "change",
            WatchParam::Above => "above",
            WatchParam::Below => "below",
            WatchParam::Hysteresis => "hysteresis",
            WatchParam::MinInterval => "min_interval",
            WatchParam::MaxInterval => "max_interval",
        }
    }
}

/// Where in `injection_config.watch` an error is: a watched field, and
/// which of its values. Held by value: the name is kept to
/// [`MAX_WATCH_NAME`] bytes (a longer one is shown cut, with `…`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct WatchPath {
    name: ZoneName,
    cut: bool,
    param: Option<WatchParam>,
}

impl WatchPath {
    /// The path of watched field `name`'s `param` (the whole watch when `None`).
    pub fn new(name: &str, param: Option<WatchParam>) -> Self {
        WatchPath { name: ZoneName::new(name), cut: name.len() > MAX_WATCH_NAME, param }
    }

    /// The watched field's name (cut to [`MAX_WATCH_NAME`] bytes).
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// Which value, if the error is about one.
    pub fn param(&self) -> Option<WatchParam> {
        self.param
    }
}

impl fmt::Display for WatchPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "injection_config.watch.{}{}", self.name, if self.cut { "…" } else { "" })?;
        match self.param {
            Some(p) => write!(f, ".{}", p.key()),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for WatchPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for WatchPath {
    fn format(&self, f: defmt::Formatter<'_>) {
        let param = self.param.map_or("", WatchParam::key);
        defmt::write!(f, "injection_config.watch.{=str}.{=str}", self.name.as_str(), param)
    }
}

/// Why a watch is invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum WatchProblem {
    /// `change` is 0 or negative.
    NotPositive(Decimal),
    /// `hysteresis` is negative.
    Negative(Decimal),
    /// None of `change`, `above`, `below`, `min_interval`, `max_interval`
    /// is set: it would be only "nothing told yet".
    NoCondition,
    /// `min_interval` is not below `max_interval` (both in seconds): the
    /// heartbeat would always come before the floor lifts.
    IntervalsOutOfOrder(Interval, Interval),
    /// The field is an extra field: static, it never changes.
    ExtraField,
    /// The field is a built-in one (`current-time`, `tasks`, ...).
    BuiltinKey,
    /// The name is longer than [`MAX_WATCH_NAME`] bytes.
    NameTooLong,
    /// The name holds `<` or `>`: its tag could not be read back.
    AngleBracket,
}

/// An invalid watch, and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WatchError {
    /// The watched field, and the value at fault.
    pub path: WatchPath,
    /// What is wrong.
    pub problem: WatchProblem,
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        match self.problem {
            WatchProblem::NotPositive(v) => write!(f, "must be greater than 0, got {v}"),
            WatchProblem::Negative(v) => write!(f, "must be at least 0, got {v}"),
            WatchProblem::NoCondition => f.write_str("needs at least one of change, above, below, min_interval, max_interval"),
            WatchProblem::IntervalsOutOfOrder(min, max) => write!(f, "must be less than max_interval ({max}), got {min}"),
            WatchProblem::ExtraField => f.write_str("is an extra field, which never changes: only a live field can be watched"),
            WatchProblem::BuiltinKey => f.write_str(
                "is a built-in field (current-time, timezone, tasks, context-length, tool-error): only a live field can be watched",
            ),
            WatchProblem::NameTooLong => write!(f, "a watched field's name may be at most {MAX_WATCH_NAME} bytes"),
            WatchProblem::AngleBracket => f.write_str("a watched field's name may not contain '<' or '>'"),
        }
    }
}

impl core::error::Error for WatchError {}

/// Checks each watch of `watches` against the configuration's extra fields.
pub(crate) fn validate(
    watches: &WatchList<'_>,
    extra: &crate::config::ExtraFields<'_>,
) -> Result<(), WatchError> {
    for (name, w) in watches.iter() {
        let err = |param, problem| Err(WatchError { path: WatchPath::new(name, param), problem });
        if name.len() > MAX_WATCH_NAME {
            return err(None, WatchProblem::NameTooLong);
        }
        if name.contains(['<', '>']) {
            return err(None, WatchProblem::AngleBracket);
        }
        if crate::config::is_builtin_key(name) {
            return err(None, WatchProblem::BuiltinKey);
        }
        if extra.iter().any(|(k, _)| k == name) {
            return err(None, WatchProblem::ExtraField);
        }
        if w.change.is_none() && w.above.is_none() && w.below.is_none() && !w.has_time_rule() {
            return err(None, WatchProblem::NoCondition);
        }
        if let (Some(min), Some(max)) = (w.min_interval, w.max_interval) {
            if min >= max {
                return err(
                    Some(WatchParam::MinInterval),
                    WatchProblem::IntervalsOutOfOrder(min, max),
                );
            }
        }
        if let Some(c) = w.change.filter(|c| !c.is_positive()) {
            return err(Some(WatchParam::Change), WatchProblem::NotPositive(c));
        }
        if w.hysteresis.is_negative() {
            return err(Some(WatchParam::Hysteresis), WatchProblem::Negative(w.hysteresis));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).unwrap()
    }

    #[test]
    fn a_reading_s_value_is_its_leading_decimal_after_ascii_whitespace() {
        for (text, value) in [
            ("27.75 °C", Some("27.75")),
            (" \t\n\r\x0c-3.5", Some("-3.5")),
            ("+4", Some("4")),
            ("27.", Some("27")),
            ("27.x", Some("27")),
            ("007.50kPa", Some("7.5")),
            ("1.2.3", Some("1.2")),
            ("unavailable", None),
            ("", None),
            (".5", None),
            ("-", None),
            ("+-1", None),
            ("\u{a0}5", None), // not ASCII whitespace
            ("\x0b5", None),   // vertical tab is not ASCII whitespace
            ("９", None),      // not an ASCII digit
        ] {
            let got = Decimal::leading(text.bytes()).map(|(d, _)| d.to_string());
            assert_eq!(got.as_deref(), value, "{text:?}");
        }
        assert_eq!(Decimal::leading("  27.75 °C".bytes()).map(|(_, n)| n), Some(7));
        assert_eq!(Decimal::leading("27. ".bytes()).map(|(_, n)| n), Some(2));
    }

    #[test]
    fn arithmetic_is_exact_to_the_bounds_and_nothing_past_them_fits() {
        assert_eq!(d("22.3").distance(d("20.3")), d("2.0"));
        // Where binary floats fall short: 0.3 − 0.1 is exactly 0.2.
        assert_eq!(d("0.3").distance(d("0.1")), d("0.2"));
        let (a, b): (f64, f64) = ("0.3".parse().unwrap(), "0.1".parse().unwrap());
        assert!(a - b < 0.2);
        let nineteen = "9999999999999999999";
        assert_eq!(d(nineteen).to_string(), nineteen);
        assert_eq!(Decimal::parse("10000000000000000000"), None);
        assert_eq!(d("-0.000000000000000001").to_string(), "-0.000000000000000001");
        assert_eq!(d("0.1000000000000000000000").to_string(), "0.1");
        assert_eq!(Decimal::parse("0.0000000000000000001"), None);
        assert_eq!(
            Decimal::parse(&std::format!("{nineteen}.999999999999999999"))
                .map(|d| d.to_string())
                .as_deref(),
            Some("9999999999999999999.999999999999999999")
        );
        assert_eq!(Decimal::leading("123456789012345678901234567890123456789012".bytes()), None);
        assert_eq!(d("-0").to_string(), "0");
        assert_eq!(Decimal::new(285, 1), Some(d("28.5")));
        assert_eq!(Decimal::new(-2, 0), Some(d("-2")));
        assert_eq!(Decimal::new(1, 19), None);
    }

    #[test]
    fn whole_texts_and_json_numbers_parse_exactly() {
        for (text, value) in [
            ("2", Some("2")),
            ("2.0", Some("2")),
            ("-0.5", Some("-0.5")),
            ("1e1", Some("10")),
            ("25E-1", Some("2.5")),
            ("2.5e+1", Some("25")),
            ("0e999", Some("0")),
            ("1e-19", None),
            ("1e19", None),
            ("1e99999999999", None),
            ("1e", None),
            ("1e+", None),
            ("2 ", None),
            (" 2", None),
            ("2.5x", None),
            ("", None),
            ("abc", None),
        ] {
            assert_eq!(Decimal::parse(text).map(|d| d.to_string()).as_deref(), value, "{text:?}");
        }
        assert!(
            d("0.1").is_positive()
                && !d("0").is_positive()
                && d("-0.1").is_negative()
                && !d("0").is_negative()
        );
    }

    /// The exponent as the value times or over ten, step by step in `i128`
    /// (what `parse` did before it shifted in `u64` parts): the model.
    fn shifted_in_i128(mantissa: &str, exponent: i32) -> Option<Decimal> {
        // Magnitudes below 10^37: 19 integer digits.
        const LIMIT: i128 = ONE * WHOLE_LIMIT as i128;
        let mut units = Decimal::leading(mantissa.bytes())?.0 .0;
        for _ in 0..exponent.unsigned_abs().min(40) {
            units = match exponent < 0 {
                true if units % 10 == 0 => units / 10,
                true => return None,
                false => units.checked_mul(10).filter(|u| u.abs() < LIMIT)?,
            };
        }
        Some(Decimal(units))
    }

    proptest::proptest! {
        #[test]
        fn an_exponent_shifts_exactly_as_in_i128(
            negative: bool,
            whole in proptest::prop_oneof![0u64..100, 0u64..WHOLE_LIMIT],
            fraction in proptest::prop_oneof![0u64..1000, 0u64..ONE as u64],
            places in 0usize..=18,
            exponent in -40i32..=40,
        ) {
            let digits = std::format!("{fraction:018}");
            let mantissa = std::format!("{}{whole}.{}", if negative { "-" } else { "" }, &digits[..places]);
            let mantissa = mantissa.trim_end_matches('.');
            let text = std::format!("{mantissa}e{exponent}");
            proptest::prop_assert_eq!(Decimal::parse(&text), shifted_in_i128(mantissa, exponent), "{}", text);
        }
    }

    #[test]
    fn shifts_carry_digits_between_the_parts_and_stop_where_they_do_not_fit() {
        for (text, value) in [
            ("123.456e-15", Some("0.000000000000123456")),
            ("0.000000000000000001e18", Some("1")),
            ("0.000000000000000001e36", Some("1000000000000000000")),
            ("0.000000000000000001e37", None),
            ("9999999999999999999e-18", Some("9.999999999999999999")),
            ("9999999999999999999e-19", None),
            ("-1.5e-17", Some("-0.000000000000000015")),
            ("-1.5e-18", None),
            ("1e18", Some("1000000000000000000")),
            ("0.1e19", Some("1000000000000000000")),
            ("1.844674407370955161e18", Some("1844674407370955161")),
            ("9.9e18", Some("9900000000000000000")),
            ("2e18", Some("2000000000000000000")),
            ("2e19", None),
        ] {
            assert_eq!(Decimal::parse(text).map(|d| d.to_string()).as_deref(), value, "{text:?}");
        }
    }

    fn watch(change: Option<&str>, above: Option<&str>, below: Option<&str>, h: &str) -> Watch {
        Watch {
            change: change.map(d),
            above: above.map(d),
            below: below.map(d),
            hysteresis: d(h),
            ..Default::default()
        }
    }

    fn fires(w: &Watch, v: Option<&str>, t: Option<&str>) -> bool {
        w.fires(v.map(d), t.map(d), None).fired()
    }

    #[test]
    fn an_unavailable_reading_never_fires_and_nothing_told_always_does() {
        let w = watch(Some("2"), Some("28"), Some("10"), "0.5");
        assert!(!fires(&w, None, None) && !fires(&w, None, Some("20")));
        assert!(fires(&w, Some("20"), None));
    }

    #[test]
    fn a_change_fires_at_its_size_either_way() {
        let w = watch(Some("2.0"), None, None, "0");
        assert!(fires(&w, Some("22.3"), Some("20.3")));
        assert!(fires(&w, Some("18.3"), Some("20.3")));
        assert!(!fires(&w, Some("22.29"), Some("20.3")));
        assert!(!fires(&w, Some("18.31"), Some("20.3")));
    }

    #[test]
    fn above_fires_crossing_up_and_coming_back_past_the_band() {
        let w = watch(None, Some("28"), None, "0.5");
        // t <= A < v
        assert!(fires(&w, Some("28.01"), Some("28")));
        assert!(fires(&w, Some("29"), Some("20")));
        assert!(!fires(&w, Some("28"), Some("20")));
        // t > A and v <= A − h
        assert!(fires(&w, Some("27.5"), Some("29")));
        assert!(!fires(&w, Some("27.51"), Some("29")));
        assert!(!fires(&w, Some("30"), Some("29")));
    }

    #[test]
    fn below_fires_crossing_down_and_coming_back_past_the_band() {
        let w = watch(None, None, Some("10"), "0.5");
        // t >= B > v
        assert!(fires(&w, Some("9.99"), Some("10")));
        assert!(!fires(&w, Some("10"), Some("12")));
        // t < B and v >= B + h
        assert!(fires(&w, Some("10.5"), Some("9")));
        assert!(!fires(&w, Some("10.49"), Some("9")));
        assert!(!fires(&w, Some("5"), Some("9")));
    }
}
