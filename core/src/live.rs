//! Live values: the fields read when a hint is made ([`LiveFields`]), one
//! reading each that may fail ([`LiveReadings`]), and a reading's value as a
//! watch compares it.

use core::fmt::{self, Write as _};

use crate::config::watch::Decimal;
use crate::config::ExtraFields;

/// What a live field says when its reading failed or was not taken.
pub const UNAVAILABLE: &str = "unavailable";

/// Fields whose values are read when an injection fires: sensor readings,
/// uptime, anything live. Attached to a hint, never a trigger by themselves.
pub trait LiveFields {
    /// Called once when an injection fires, before any field is read; read
    /// sensors here, so that nothing is read for a step that injects nothing.
    ///
    /// With a watch configured, a step (`Engine::step`, `AgentContext::step`,
    /// `Journal::step`) reads before deciding ([`refresh_watched`]) and, when
    /// it fires, calls [`refresh_unwatched`] instead of this: each sensor is
    /// read once per step, so the reading that fired a watch is the one the
    /// hint tells.
    ///
    /// [`refresh_watched`]: Self::refresh_watched
    /// [`refresh_unwatched`]: Self::refresh_unwatched
    fn refresh(&mut self) {}
    /// Called at every step before deciding, when a watch is configured
    /// (`injection_config.watch`): read the watched fields' sensors here.
    /// By default it calls [`refresh`](Self::refresh), reading every field;
    /// a device whose other sensors are costly reads only the watched ones,
    /// and reads the others in [`refresh_unwatched`](Self::refresh_unwatched).
    fn refresh_watched(&mut self) {
        self.refresh();
    }
    /// Called when an injection fires on a step whose fields
    /// [`refresh_watched`](Self::refresh_watched) read before deciding: read
    /// the fields it did not. By default nothing, as the default
    /// `refresh_watched` read every field; override the two together.
    fn refresh_unwatched(&mut self) {}
    /// How many fields there are.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Field `i` as `(key, value)`.
    fn field(&self, i: usize) -> Option<(&str, &str)>;
}

impl LiveFields for ExtraFields<'_> {
    fn len(&self) -> usize {
        ExtraFields::len(self)
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        self.get(i)
    }
}

/// No live fields.
impl LiveFields for () {
    fn len(&self) -> usize {
        0
    }
    fn field(&self, _: usize) -> Option<(&str, &str)> {
        None
    }
}

/// Whether `live` has a field named `name` (read or not).
pub(crate) fn provides<L: LiveFields + ?Sized>(live: &L, name: &str) -> bool {
    (0..live.len()).any(|i| live.field(i).is_some_and(|(k, _)| k == name))
}

/// The value of live field `name` in `live`: the leading decimal of the
/// last field with that key (the one a hint renders), if any.
pub(crate) fn reading<L: LiveFields + ?Sized>(live: &L, name: &str) -> Option<Decimal> {
    let value = (0..live.len()).rev().find_map(|i| live.field(i).filter(|(k, _)| *k == name))?.1;
    Decimal::leading(value.bytes()).map(|(d, _)| d)
}

/// `N` live fields with fixed keys, each holding its last reading (at most
/// `VALUE` bytes) or nothing: a field without a reading says
/// [`UNAVAILABLE`].
///
/// [`LiveFields`] reads every field in one synchronous
/// `refresh`. A device whose sensors are async (embassy), or whose sensors
/// fail one by one, reads them between [`Engine::decide`](crate::Engine::decide)
/// and [`Engine::render_step`](crate::Engine::render_step) instead, and records each
/// result in a [`LiveReadings`]: a field whose reading failed, was never
/// taken, or does not fit says [`UNAVAILABLE`] in the hint. The field is
/// kept rather than dropped, so the agent knows the reading is missing
/// rather than never offered (the firmware's TMP105 does the same).
///
/// ```
/// use envaware::{LiveFields, LiveReadings, UNAVAILABLE};
///
/// let mut live: LiveReadings<'_, 2, 16> = LiveReadings::new(["temperature", "humidity"]);
/// live.record(0, Ok::<_, ()>(format_args!("{} °C", 21.5)));
/// live.record(1, Err::<f32, _>("bus error"));
/// assert_eq!(live.field(0), Some(("temperature", "21.5 °C")));
/// assert_eq!(live.field(1), Some(("humidity", UNAVAILABLE)));
/// ```
#[derive(Debug, Clone)]
pub struct LiveReadings<'k, const N: usize, const VALUE: usize> {
    keys: [&'k str; N],
    values: [Option<heapless::String<VALUE>>; N],
}

impl<'k, const N: usize, const VALUE: usize> LiveReadings<'k, N, VALUE> {
    /// Fields named `keys`, in order, all unavailable until recorded.
    pub fn new(keys: [&'k str; N]) -> Self {
        LiveReadings { keys, values: [const { None }; N] }
    }

    /// Records field `i`'s reading: its `Display` text on `Ok`, unavailable
    /// on `Err` or when the text is longer than `VALUE` bytes. Returns
    /// whether the field now holds a value; an index past the end changes
    /// nothing and returns `false`.
    pub fn record<T: fmt::Display, E>(&mut self, i: usize, reading: Result<T, E>) -> bool {
        let Some(slot) = self.values.get_mut(i) else { return false };
        *slot = None;
        if let Ok(value) = reading {
            let mut text = heapless::String::new();
            if write!(text, "{value}").is_ok() {
                *slot = Some(text);
            }
        }
        slot.is_some()
    }

    /// Marks every field unavailable (e.g. before reading the sensors
    /// again, so that a stale value is never sent).
    pub fn clear(&mut self) {
        self.values = [const { None }; N];
    }

    /// Whether field `i` holds a reading.
    pub fn is_available(&self, i: usize) -> bool {
        self.values.get(i).is_some_and(Option::is_some)
    }
}

impl<const N: usize, const VALUE: usize> LiveFields for LiveReadings<'_, N, VALUE> {
    fn len(&self) -> usize {
        N
    }

    fn field(&self, i: usize) -> Option<(&str, &str)> {
        let key = *self.keys.get(i)?;
        let value = self.values.get(i)?.as_ref().map_or(UNAVAILABLE, |v| v.as_str());
        Some((key, value))
    }
}

impl<'k, const N: usize, const VALUE: usize> LiveReadings<'k, N, VALUE> {
    /// Records field `i` as what `write` writes: unavailable when it
    /// returns `Err` or writes more than `VALUE` bytes. As
    /// [`record`](Self::record) otherwise.
    fn record_with(
        &mut self,
        i: usize,
        write: impl FnOnce(&mut dyn fmt::Write) -> fmt::Result,
    ) -> bool {
        let Some(slot) = self.values.get_mut(i) else { return false };
        let mut text = heapless::String::new();
        *slot = write(&mut text).is_ok().then_some(text);
        slot.is_some()
    }
}

/// [`LiveFields`] over a closure: `N` fields with fixed keys, each read by
/// `read(i, w)`, which writes field `i`'s value to `w`.
///
/// The values are read in [`refresh`](LiveFields::refresh), once per step
/// that injects (or, with a watch configured, once per step), and kept in
/// `VALUE` bytes each: the closure is the sensor code, the adapter the
/// storage the trait's borrowed `&str` values need. A field whose read
/// returns `Err` (a failed sensor: return `Err(core::fmt::Error)`), writes
/// more than `VALUE` bytes, or was not read yet says [`UNAVAILABLE`], as
/// in [`LiveReadings`], which this fills.
///
/// ```
/// use core::fmt::Write as _;
/// use envaware::{AgentContext, Config, Engine, FixedClock, LiveFn, StepInput, TaskCounts, Timestamp};
///
/// let engine = Engine::new(Config::default())?;
/// let mut context: AgentContext<'_, 4, 16, 2048> = AgentContext::new(&engine, "rover");
/// context.user("operator")?;
///
/// let battery_mv = 3712; // e.g. an ADC read
/// // Two fields of at most 16 bytes each; the hygrometer is not answering.
/// let mut live: LiveFn<'_, 2, 16, _> = LiveFn::new(["battery", "humidity"], |i, w| match i {
///     0 => write!(w, "{battery_mv} mV"),
///     _ => Err(core::fmt::Error),
/// });
///
/// let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
/// let step = StepInput { tasks: TaskCounts::default(), cur_iter: 0, input_tokens: 900, context_size: 8192 };
/// let mut hint = [0u8; 1024];
/// let outcome = context.step(&step, &mut clock, &mut live, &mut hint)?;
/// let hint = outcome.hint.expect("the first step tells the time");
/// assert!(hint.contains("<battery>3712 mV</battery>"), "{hint}");
/// assert!(hint.contains("<humidity>unavailable</humidity>"), "{hint}");
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
pub struct LiveFn<'k, const N: usize, const VALUE: usize, F> {
    readings: LiveReadings<'k, N, VALUE>,
    read: F,
}

impl<'k, const N: usize, const VALUE: usize, F> LiveFn<'k, N, VALUE, F>
where
    F: FnMut(usize, &mut dyn fmt::Write) -> fmt::Result,
{
    /// Fields named `keys`, in order, read by `read(i, w)`; all
    /// unavailable until the first [`refresh`](LiveFields::refresh).
    pub fn new(keys: [&'k str; N], read: F) -> Self {
        LiveFn { readings: LiveReadings::new(keys), read }
    }

    /// The values the last refresh read.
    pub fn readings(&self) -> &LiveReadings<'k, N, VALUE> {
        &self.readings
    }
}

impl<const N: usize, const VALUE: usize, F> LiveFields for LiveFn<'_, N, VALUE, F>
where
    F: FnMut(usize, &mut dyn fmt::Write) -> fmt::Result,
{
    fn refresh(&mut self) {
        let read = &mut self.read;
        for i in 0..N {
            self.readings.record_with(i, |w| read(i, w));
        }
    }

    fn len(&self) -> usize {
        N
    }

    fn field(&self, i: usize) -> Option<(&str, &str)> {
        self.readings.field(i)
    }
}

impl<const N: usize, const VALUE: usize, F> fmt::Debug for LiveFn<'_, N, VALUE, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveFn").field("readings", &self.readings).finish_non_exhaustive()
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const VALUE: usize, F> defmt::Format for LiveFn<'_, N, VALUE, F> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "LiveFn {{ {} }}", self.readings);
    }
}

#[cfg(feature = "defmt")]
impl<const N: usize, const VALUE: usize> defmt::Format for LiveReadings<'_, N, VALUE> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "LiveReadings {{");
        for i in 0..N {
            if let Some((k, v)) = self.field(i) {
                defmt::write!(f, " {=str}: {=str}", k, v);
            }
        }
        defmt::write!(f, " }}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_too_long_or_failed_is_unavailable() {
        let mut live: LiveReadings<'_, 2, 4> = LiveReadings::new(["a", "b"]);
        assert_eq!((live.len(), live.field(0)), (2, Some(("a", UNAVAILABLE))));
        assert!(!live.is_available(0));
        assert!(live.record(0, Ok::<_, ()>("1234")));
        assert!(live.is_available(0) && !live.is_available(1) && !live.is_available(2));
        assert!(!live.record(1, Ok::<_, ()>("12345")));
        assert_eq!(live.field(0), Some(("a", "1234")));
        assert_eq!(live.field(1), Some(("b", UNAVAILABLE)));
        assert!(!live.record(0, Err::<&str, _>(())));
        assert!(!live.is_available(0));
        assert!(!live.record(2, Ok::<_, ()>("x")));
        assert_eq!(live.field(2), None);
        live.record(1, Ok::<_, ()>(7));
        live.clear();
        assert_eq!(live.field(1), Some(("b", UNAVAILABLE)));
    }

    #[test]
    fn a_closure_is_read_at_each_refresh_and_a_failed_or_long_value_is_unavailable() {
        let mut calls = 0;
        let mut live: LiveFn<'_, 3, 4, _> = LiveFn::new(["a", "b", "c"], |i, w| {
            calls += 1;
            match i {
                0 => write!(w, "{}", calls),
                1 => w.write_str("12345"),
                _ => Err(fmt::Error),
            }
        });
        assert_eq!(live.len(), 3);
        assert_eq!(live.field(0), Some(("a", UNAVAILABLE)));
        live.refresh();
        assert_eq!(live.field(0), Some(("a", "1")));
        assert_eq!(live.field(1), Some(("b", UNAVAILABLE)));
        assert_eq!(live.field(2), Some(("c", UNAVAILABLE)));
        assert_eq!(live.field(3), None);
        // Each refresh reads every field again; the default refresh_watched
        // reads them all, and refresh_unwatched reads none.
        live.refresh_watched();
        live.refresh_unwatched();
        assert_eq!(live.field(0), Some(("a", "4")));
        assert!(live.readings().is_available(0) && !live.readings().is_available(1));
        assert!(std::format!("{live:?}").starts_with("LiveFn { readings: LiveReadings"));
    }

    #[test]
    fn a_reading_is_the_last_live_field_of_that_key() {
        let live = ExtraFields::Slice(&[("t", "1 °C"), ("u", "5"), ("t", " 2.5 °C")]);
        assert_eq!(reading(&live, "t"), Decimal::parse("2.5"));
        assert_eq!(reading(&live, "v"), None);
        assert_eq!(reading(&ExtraFields::Slice(&[("t", UNAVAILABLE)]), "t"), None);
    }
}
