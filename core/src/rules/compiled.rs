//! The configuration as the rules read it: a [`Config`] that passed
//! validation, with what validation resolved once (the zone, the time
//! rule's constants, the task tool names' bits), so that no step checks it
//! again.

use super::Warnings;
use crate::args::Comparison;
use crate::config::error::{ConfigError, ConfigField, Warning};
use crate::config::watch::{self, MAX_WATCHES};
use crate::config::ZoneName;
use crate::config::{is_builtin_key, Config, RUNTIME_STATE_PLACEHOLDER};
use crate::time::{self, Zone};

fn has_angle_bracket(text: &str) -> bool {
    text.bytes().any(|b| b == b'<' || b == b'>')
}

/// A configuration that passed [`Config::validate`]: the [`Config`] itself
/// ([`ValidConfig::config`]), with what validation resolved once (the
/// configured zone, the warnings to report at every step), so that no step
/// checks it again.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ValidConfig<'a> {
    pub(crate) config: Config<'a>,
    /// The buffer in force (the deprecated field overrides).
    pub(crate) buffer_ratio: f64,
    pub(crate) zone: Zone,
    pub(crate) format_parseable: bool,
    /// Where `{runtime_state}` first stands in the template: the length of
    /// the text every hint envaware renders starts with (strict mode reads
    /// fields only after it).
    pub(crate) state_start: usize,
    /// How the tool-error rule compares arguments (the device's capacity
    /// unless [`Engine::with_argument_capacity`](crate::Engine::with_argument_capacity) chose another).
    pub(crate) arguments: Comparison,
    /// The time rule's constants (the zone's fixed offset, the longest
    /// elapsed time not due).
    pub(crate) time_rule: TimeRule,
    /// [`ValidConfig::warnings`] as every decision carries them.
    pub(crate) decision_warnings: Warnings,
    /// The bits of the task tool names ([`name_bit`]): a
    /// tool call whose bit is not among them names no task tool.
    pub(crate) task_tool_bits: u64,
}

impl<'a> ValidConfig<'a> {
    /// The configuration as given.
    pub fn config(&self) -> &Config<'a> {
        &self.config
    }

    /// The context buffer ratio in force.
    pub fn buffer_ratio(&self) -> f64 {
        self.buffer_ratio
    }

    /// The zone whose wall time is injected: the configured one, or UTC
    /// when it fell back ([`Warning::TimezoneFellBackToUtc`]).
    pub fn zone(&self) -> Zone {
        self.zone
    }

    /// The warnings this configuration yields on its own.
    pub fn warnings(&self) -> impl Iterator<Item = Warning> {
        let deprecated = self.config.injection.context_buffer_ratio.is_some();
        let fallback = self.zone == Zone::Utc;
        let unparseable = !self.format_parseable;
        [
            deprecated.then_some(Warning::DeprecatedContextBufferRatio),
            fallback.then_some(Warning::TimezoneFellBackToUtc),
            unparseable.then_some(Warning::TimeFormatNotParseable),
        ]
        .into_iter()
        .flatten()
    }
}

fn check_ratio(
    field: ConfigField,
    value: f64,
    ok: bool,
    range: &'static str,
) -> Result<(), ConfigError> {
    // NaN fails every comparison, as in pydantic.
    if ok {
        Ok(())
    } else {
        Err(ConfigError::RatioOutOfRange { field, value, range })
    }
}

impl<'a> Config<'a> {
    /// Checks the configuration as the reference does, and what envaware
    /// rejects on purpose. Returns the first error, in field order.
    pub fn validate(self) -> Result<ValidConfig<'a>, ConfigError> {
        let inj = &self.injection;
        let ctx = &self.context;
        let (zone, unknown_zone) = match time::resolve_zone(inj.timezone) {
            Some(zone) => (zone, false),
            None if time::zone_not_compiled_in(inj.timezone) => {
                if !inj.filtered_zone_falls_back_to_utc {
                    return Err(ConfigError::ZoneNotCompiledIn(ZoneName::new(inj.timezone)));
                }
                (Zone::Utc, false)
            }
            // Not an IANA zone at all: UTC with a warning, as the reference
            // does, unless strict mode refuses it below.
            None => (Zone::Utc, true),
        };
        let info = time::check_format(inj.time_format).map_err(ConfigError::TimeFormat)?;
        if info.parse_back == time::ParseBack::ReferenceCrashes {
            return Err(ConfigError::TimeFormatRepeatsDirective);
        }
        if inj.time_interval.is_nan() || inj.time_interval < 0.0 {
            return Err(ConfigError::NegativeTimeInterval(inj.time_interval));
        }
        if let Some(b) = inj.context_buffer_ratio {
            check_ratio(
                ConfigField::InjectionContextBufferRatio,
                b,
                (0.0..=1.0).contains(&b),
                "[0, 1]",
            )?;
        }
        if inj.tool_retries_limit < 3 {
            return Err(ConfigError::ToolRetriesLimitBelow3(inj.tool_retries_limit));
        }
        let Some(state_start) =
            crate::text::find_bytes(inj.template.as_bytes(), RUNTIME_STATE_PLACEHOLDER.as_bytes())
        else {
            return Err(ConfigError::TemplateWithoutPlaceholder);
        };
        if inj.strict {
            // The operator's own text (template, tool-retries hint) may hold
            // tags; what is injected as a value may not.
            if has_angle_bracket(inj.timezone) {
                return Err(ConfigError::AngleBracketInStrictMode(ConfigField::Timezone));
            }
            if inj.extra_fields.iter().any(|(k, v)| has_angle_bracket(k) || has_angle_bracket(v)) {
                return Err(ConfigError::AngleBracketInStrictMode(ConfigField::ExtraFields));
            }
            if inj.extra_fields.iter().any(|(k, _)| is_builtin_key(k)) {
                return Err(ConfigError::BuiltinKeyInStrictMode);
            }
            if unknown_zone {
                return Err(ConfigError::UnknownZoneInStrictMode(ZoneName::new(inj.timezone)));
            }
        }
        if inj.watch.len() > MAX_WATCHES {
            return Err(ConfigError::TooManyWatches(inj.watch.len()));
        }
        watch::validate(&inj.watch, &inj.extra_fields).map_err(ConfigError::Watch)?;
        let t = ctx.trigger_ratio;
        check_ratio(ConfigField::TriggerRatio, t, t > 0.0 && t <= 0.9, "(0, 0.9]")?;
        let r = ctx.reserve_ratio;
        check_ratio(ConfigField::ReserveRatio, r, r > 0.0 && r < 0.9, "(0, 0.9)")?;
        let c = ctx.context_buffer_ratio;
        check_ratio(ConfigField::ContextBufferRatio, c, (0.0..=1.0).contains(&c), "[0, 1]")?;
        if r >= t {
            return Err(ConfigError::ReserveNotBelowTrigger { reserve: r, trigger: t });
        }
        let (buffer, buffer_field) = match inj.context_buffer_ratio {
            Some(b) => (b, ConfigField::InjectionContextBufferRatio),
            None => (c, ConfigField::ContextBufferRatio),
        };
        if (inj.inject_runtime_state || ctx.compression_tool_enabled) && buffer >= t {
            return Err(ConfigError::BufferNotBelowTrigger {
                buffer,
                trigger: t,
                field: buffer_field,
            });
        }
        // The tag regex cannot cross a newline: such a format never reads back.
        let format_parseable = info.parseable() && !inj.time_format.bytes().any(|b| b == b'\n');
        let time_rule = TimeRule::new(zone, inj.time_interval);
        let mut valid = ValidConfig {
            config: self,
            buffer_ratio: buffer,
            zone,
            format_parseable,
            state_start,
            arguments: Default::default(),
            time_rule,
            decision_warnings: Default::default(),
            task_tool_bits: self
                .injection
                .task_tool_names
                .iter()
                .fold(0, |bits, name| bits | name_bit(name)),
        };
        valid.decision_warnings = Warnings::of(valid.warnings());
        Ok(valid)
    }
}

/// A bit for `name` from its length and first byte: names with different
/// bits differ.
#[inline(always)]
pub(crate) fn name_bit(name: &str) -> u64 {
    let first = name.as_bytes().first().copied().unwrap_or(0);
    1 << (name.len().wrapping_mul(7).wrapping_add(usize::from(first)) % 64)
}

/// What the time rule can know of the configuration before any step, worked
/// out once when it is validated: whether the zone's offset never changes,
/// and the longest elapsed time that is not due, so that a decision compares
/// integers and touches no zone table and no float.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct TimeRule {
    /// The zone's UTC offset in microseconds, when it is the same at every
    /// instant (UTC, `Etc/*`): the wall clock is then `now` plus it.
    pub(crate) fixed_offset_micros: Option<i64>,
    /// The largest elapsed time in microseconds, up to 2**53, that Python
    /// does not find due: `0 <= (d / 10**6) / 3600 <= interval`.
    pub(crate) not_due_up_to: i64,
}

/// Elapsed microseconds up to which [`TimeRule::not_due_up_to`] answers
/// (beyond, the elapsed hours are worked out at each decision:
/// [`time::elapsed_hours`]).
pub(crate) const EXACT_MICROS: i64 = 1 << 53;

impl TimeRule {
    pub(crate) fn new(zone: Zone, interval: f64) -> Self {
        let not_due = |d: i64| time::elapsed_hours(d.unsigned_abs()) <= interval;
        // Dividing by positive constants with correct rounding is monotone:
        // the elapsed times that are not due form a prefix of [0, 2**53].
        let (mut lo, mut hi) = (0, EXACT_MICROS);
        if not_due(hi) {
            lo = hi;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if not_due(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let fixed_offset_micros = time::fixed_offset(zone).map(|secs| i64::from(secs) * 1_000_000);
        TimeRule { fixed_offset_micros, not_due_up_to: if not_due(lo) { lo } else { -1 } }
    }

    /// Python's `0 <= hours <= interval` on the microseconds elapsed from
    /// `then` to `now`.
    pub(crate) fn not_due(&self, now: i64, then: i64, interval: f64) -> bool {
        if let Some(elapsed) = now.checked_sub(then).filter(|d| (0..=EXACT_MICROS).contains(d)) {
            return elapsed <= self.not_due_up_to;
        }
        // A negative elapsed time is never within `0 <= hours`.
        now >= then && time::elapsed_hours(now.abs_diff(then)) <= interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::Section;
    use crate::config::{ContextConfig, ExtraFields, InjectionConfig, Span, StrList, BUILTIN_KEYS};
    use crate::time::TimeFormatError;
    use std::string::ToString;

    fn with(
        injection: InjectionConfig<'static>,
        context: ContextConfig,
    ) -> Result<ValidConfig<'static>, ConfigError> {
        Config { injection, context }.validate()
    }

    fn inj(
        f: impl FnOnce(&mut InjectionConfig<'static>),
    ) -> Result<ValidConfig<'static>, ConfigError> {
        let mut i = InjectionConfig::default();
        f(&mut i);
        with(i, ContextConfig::default())
    }

    fn ctx(
        f: impl FnOnce(&mut ContextConfig),
        inject: bool,
    ) -> Result<ValidConfig<'static>, ConfigError> {
        let mut c = ContextConfig::default();
        f(&mut c);
        with(InjectionConfig { inject_runtime_state: inject, ..Default::default() }, c)
    }

    #[test]
    fn lists_read_the_same_from_slices_and_from_spans() {
        let text = "TaskGetplankv";
        let spans = [Span { start: 0, end: 7 }, Span { start: 7, end: 11 }];
        let names = [StrList::Slice(&["TaskGet", "plan"]), StrList::Spans { text, spans: &spans }];
        for list in names {
            assert_eq!((list.len(), list.is_empty()), (2, false));
            assert_eq!(
                (list.get(0), list.get(1), list.get(2)),
                (Some("TaskGet"), Some("plan"), None)
            );
            assert_eq!(list.iter().collect::<std::vec::Vec<_>>(), ["TaskGet", "plan"]);
            assert!(list.contains("TaskGet") && list.contains("plan"));
            // Same length and first byte, another first byte, a prefix, a longer name.
            for other in ["TaskGot", "XaskGet", "Task", "TaskGets", "plam", ""] {
                assert!(!list.contains(other), "{other}");
            }
        }
        for empty in [StrList::Slice(&[]), StrList::Spans { text, spans: &[] }] {
            assert_eq!((empty.len(), empty.is_empty(), empty.iter().count()), (0, true, 0));
            assert!(!empty.contains(""));
        }
        let pairs = [(Span { start: 11, end: 12 }, Span { start: 12, end: 13 })];
        for fields in
            [ExtraFields::Slice(&[("k", "v")]), ExtraFields::Spans { text, spans: &pairs }]
        {
            assert_eq!((fields.len(), fields.is_empty()), (1, false));
            assert_eq!((fields.get(0), fields.get(1)), (Some(("k", "v")), None));
            assert_eq!(fields.iter().collect::<std::vec::Vec<_>>(), [("k", "v")]);
        }
        assert!(
            ExtraFields::EMPTY.is_empty() && ExtraFields::Spans { text, spans: &[] }.is_empty()
        );
        // A span past the text, or off a char boundary, reads as "".
        assert_eq!(Span { start: 12, end: 14 }.of(text), "");
        assert_eq!(Span { start: 0, end: 1 }.of("é"), "");
        assert_eq!(Span { start: 4, end: 7 }.of(text), "Get");
    }

    #[test]
    fn each_warning_says_what_it_is_about() {
        let cases = [
            (
                Warning::DeprecatedContextBufferRatio,
                "injection_config.context_buffer_ratio is deprecated",
            ),
            (Warning::TimezoneFellBackToUtc, "injection_config.timezone is not a known IANA zone"),
            (Warning::RecordedTimezoneFellBackToUtc, "the <timezone> recorded in the context"),
            (Warning::TimeFormatNotParseable, "injection_config.time_format cannot be parsed back"),
            (Warning::LiveFieldDropped, "a live field with a built-in key was dropped"),
            (
                Warning::WatchedFieldNotLive,
                "a field in injection_config.watch is not among the live fields",
            ),
        ];
        for (w, start) in cases {
            assert!(w.to_string().starts_with(start), "{w:?}: {w}");
        }
    }

    #[test]
    fn validation_accepts_each_bound_and_rejects_just_past_it() {
        use ConfigError as E;
        assert!(inj(|_| {}).is_ok());
        assert_eq!(inj(|i| i.tool_retries_limit = 2).unwrap_err(), E::ToolRetriesLimitBelow3(2));
        assert!(inj(|i| i.tool_retries_limit = 3).is_ok());
        assert!(inj(|i| i.time_interval = 0.0).is_ok());
        assert_eq!(inj(|i| i.time_interval = -0.5).unwrap_err(), E::NegativeTimeInterval(-0.5));
        assert!(
            matches!(inj(|i| i.time_interval = f64::NAN), Err(E::NegativeTimeInterval(v)) if v.is_nan())
        );
        assert_eq!(inj(|i| i.template = "no state").unwrap_err(), E::TemplateWithoutPlaceholder);
        assert_eq!(
            inj(|i| i.template = "ab{runtime_state}{runtime_state}").unwrap().state_start,
            2
        );
        #[cfg(feature = "custom-time-format")]
        {
            assert_eq!(
                inj(|i| i.time_format = "%Y %Y-%m-%d").unwrap_err(),
                E::TimeFormatRepeatsDirective
            );
            assert!(matches!(inj(|i| i.time_format = "%H:%M").unwrap_err(), E::TimeFormat(_)));
        }
        // Without it, any format but the default is refused, naming the fix.
        #[cfg(not(feature = "custom-time-format"))]
        {
            let e = inj(|i| i.time_format = "%Y-%m-%d %H:%M").unwrap_err();
            assert_eq!(e, E::TimeFormat(TimeFormatError::NotCompiledIn));
            assert!(std::format!("{e}").contains("custom-time-format"), "{e}");
        }
        // The deprecated buffer: [0, 1], and below the trigger ratio.
        let range = |field, value, range| E::RatioOutOfRange { field, value, range };
        assert_eq!(
            inj(|i| i.context_buffer_ratio = Some(-0.1)).unwrap_err(),
            range(ConfigField::InjectionContextBufferRatio, -0.1, "[0, 1]")
        );
        assert_eq!(
            inj(|i| i.context_buffer_ratio = Some(1.1)).unwrap_err(),
            range(ConfigField::InjectionContextBufferRatio, 1.1, "[0, 1]")
        );
        assert_eq!(inj(|i| i.context_buffer_ratio = Some(0.0)).unwrap().buffer_ratio(), 0.0);
        let buffer = |buffer, field| E::BufferNotBelowTrigger { buffer, trigger: 0.8, field };
        assert_eq!(
            inj(|i| i.context_buffer_ratio = Some(0.8)).unwrap_err(),
            buffer(0.8, ConfigField::InjectionContextBufferRatio)
        );
        assert_eq!(inj(|i| i.context_buffer_ratio = Some(0.3)).unwrap().buffer_ratio(), 0.3);
        // The context configuration's ratios.
        assert!(ctx(|c| c.trigger_ratio = 0.9, true).is_ok());
        assert_eq!(
            ctx(|c| c.trigger_ratio = 0.91, true).unwrap_err(),
            range(ConfigField::TriggerRatio, 0.91, "(0, 0.9]")
        );
        assert_eq!(
            ctx(|c| c.trigger_ratio = 0.0, true).unwrap_err(),
            range(ConfigField::TriggerRatio, 0.0, "(0, 0.9]")
        );
        assert_eq!(
            ctx(|c| c.reserve_ratio = 0.0, true).unwrap_err(),
            range(ConfigField::ReserveRatio, 0.0, "(0, 0.9)")
        );
        assert_eq!(
            ctx(|c| c.reserve_ratio = 0.9, true).unwrap_err(),
            range(ConfigField::ReserveRatio, 0.9, "(0, 0.9)")
        );
        assert!(ctx(
            |c| (c.trigger_ratio, c.reserve_ratio, c.context_buffer_ratio) = (0.9, 0.89, 0.0),
            true
        )
        .is_ok());
        assert_eq!(
            ctx(|c| c.context_buffer_ratio = -0.1, true).unwrap_err(),
            range(ConfigField::ContextBufferRatio, -0.1, "[0, 1]")
        );
        assert_eq!(
            ctx(|c| c.context_buffer_ratio = 1.1, false).unwrap_err(),
            range(ConfigField::ContextBufferRatio, 1.1, "[0, 1]")
        );
        assert_eq!(
            ctx(|c| c.reserve_ratio = 0.8, true).unwrap_err(),
            E::ReserveNotBelowTrigger { reserve: 0.8, trigger: 0.8 }
        );
        assert!(ctx(|c| c.reserve_ratio = 0.79, true).is_ok());
        // The buffer must be below the trigger only while injection or the
        // compression tool is on.
        assert_eq!(
            ctx(|c| c.context_buffer_ratio = 0.8, true).unwrap_err(),
            buffer(0.8, ConfigField::ContextBufferRatio)
        );
        assert!(ctx(|c| c.context_buffer_ratio = 0.79, true).is_ok());
        assert_eq!(ctx(|c| c.context_buffer_ratio = 1.0, false).unwrap().buffer_ratio(), 1.0);
        let tool_on = |c: &mut ContextConfig| {
            (c.context_buffer_ratio, c.compression_tool_enabled) = (0.8, true)
        };
        assert_eq!(ctx(tool_on, false).unwrap_err(), buffer(0.8, ConfigField::ContextBufferRatio));
    }

    #[test]
    fn strict_mode_rejects_markers_in_injected_values_only() {
        use ConfigError as E;
        let strict = |f: fn(&mut InjectionConfig<'static>)| {
            inj(|i| {
                i.strict = true;
                f(i)
            })
        };
        assert_eq!(
            strict(|i| i.timezone = "<UTC").unwrap_err(),
            E::AngleBracketInStrictMode(ConfigField::Timezone)
        );
        assert_eq!(
            strict(|i| i.timezone = "UTC>").unwrap_err(),
            E::AngleBracketInStrictMode(ConfigField::Timezone)
        );
        assert_eq!(
            strict(|i| i.extra_fields = ExtraFields::Slice(&[("k", "a>b")])).unwrap_err(),
            E::AngleBracketInStrictMode(ConfigField::ExtraFields)
        );
        assert_eq!(
            strict(|i| i.extra_fields = ExtraFields::Slice(&[("<k", "v")])).unwrap_err(),
            E::AngleBracketInStrictMode(ConfigField::ExtraFields)
        );
        for key in BUILTIN_KEYS {
            let fields: &'static [(&str, &str)] =
                std::boxed::Box::leak(std::vec![(key, "v")].into_boxed_slice());
            assert_eq!(
                inj(|i| (i.strict, i.extra_fields) = (true, ExtraFields::Slice(fields)))
                    .unwrap_err(),
                E::BuiltinKeyInStrictMode
            );
            assert!(inj(|i| i.extra_fields = ExtraFields::Slice(fields)).is_ok());
        }
        assert!(strict(
            |i| i.extra_fields = ExtraFields::Slice(&[("robot", "R2"), ("tasks-x", "v")])
        )
        .is_ok());
        // The operator's own text may hold tags.
        assert!(strict(|i| i.template = "<r>{runtime_state}</r>").is_ok());
        assert!(inj(|i| i.timezone = "<UTC>").is_ok());
    }

    #[test]
    fn a_valid_configuration_keeps_what_it_was_given_and_says_its_warnings() {
        let valid = inj(|i| i.timezone = "Asia/Tokyo").unwrap();
        assert_eq!(valid.config().injection.timezone, "Asia/Tokyo");
        assert_eq!(valid.buffer_ratio(), 0.2);
        assert_eq!(valid.warnings().count(), 0);
        // An unknown zone falls back to UTC, as the reference does.
        let w: std::vec::Vec<_> = inj(|i| i.timezone = "Mars/Base").unwrap().warnings().collect();
        assert_eq!(w, [Warning::TimezoneFellBackToUtc]);
        assert_eq!(inj(|i| i.timezone = "UTC").unwrap().warnings().count(), 0);
        #[cfg(feature = "custom-time-format")]
        {
            let all = inj(|i| {
                (i.timezone, i.time_format, i.context_buffer_ratio) =
                    ("Nowhere", "%e %Y-%m", Some(0.1))
            })
            .unwrap();
            let w: std::vec::Vec<_> = all.warnings().collect();
            assert_eq!(
                w,
                [
                    Warning::DeprecatedContextBufferRatio,
                    Warning::TimezoneFellBackToUtc,
                    Warning::TimeFormatNotParseable
                ]
            );
            // A newline: the tag regex cannot read the time back.
            let w: std::vec::Vec<_> =
                inj(|i| i.time_format = "%Y-%m-%d\n%H").unwrap().warnings().collect();
            assert_eq!(w, [Warning::TimeFormatNotParseable]);
        }
    }

    #[test]
    fn each_error_names_its_field_first() {
        use ConfigError as E;
        let cases = [
            (
                E::TemplateWithoutPlaceholder,
                ConfigField::Template,
                "must contain the '{runtime_state}' placeholder",
            ),
            (
                E::ToolRetriesLimitBelow3(2),
                ConfigField::ToolRetriesLimit,
                "must be at least 3, got 2",
            ),
            (
                E::NegativeTimeInterval(-1.5),
                ConfigField::TimeInterval,
                "must be >= 0 hours, got -1.5",
            ),
            (
                E::RatioOutOfRange {
                    field: ConfigField::ReserveRatio,
                    value: 0.95,
                    range: "(0, 0.9)",
                },
                ConfigField::ReserveRatio,
                "must be in (0, 0.9), got 0.95",
            ),
            (
                E::ReserveNotBelowTrigger { reserve: 0.5, trigger: 0.4 },
                ConfigField::ReserveRatio,
                "must be smaller than context_config.trigger_ratio, got 0.5 and 0.4",
            ),
            (
                E::BufferNotBelowTrigger {
                    buffer: 0.5,
                    trigger: 0.4,
                    field: ConfigField::InjectionContextBufferRatio,
                },
                ConfigField::InjectionContextBufferRatio,
                "must be smaller than context_config.trigger_ratio, got 0.5 and 0.4",
            ),
            (E::TimeFormat(TimeFormatError::NoDatePart), ConfigField::TimeFormat, ""),
            (E::TimeFormatRepeatsDirective, ConfigField::TimeFormat, "a directive repeats"),
            (
                E::AngleBracketInStrictMode(ConfigField::ExtraFields),
                ConfigField::ExtraFields,
                "in strict mode it may not contain '<' or '>'",
            ),
            (
                E::BuiltinKeyInStrictMode,
                ConfigField::ExtraFields,
                "in strict mode no key may be a built-in one",
            ),
            (
                E::ZoneNotCompiledIn(ZoneName::new("Asia/Tokyo")),
                ConfigField::Timezone,
                "\"Asia/Tokyo\" is an IANA zone",
            ),
            (
                E::UnknownZoneInStrictMode(ZoneName::new("Europe/Berln")),
                ConfigField::Timezone,
                "time zone \"Europe/Berln\" is not a known IANA zone",
            ),
        ];
        for (e, field, text) in cases {
            assert_eq!(e.field(), field, "{e:?}");
            let shown = e.to_string();
            let rest = shown.strip_prefix(field.path()).and_then(|r| r.strip_prefix(": "));
            assert!(rest.is_some_and(|r| r.starts_with(text) && r.len() > 10), "{shown}");
        }
        assert_eq!(std::format!("{:?}", ZoneName::new("Asia/Tokyo")), "\"Asia/Tokyo\"");
    }

    #[test]
    fn each_field_is_found_by_its_own_key_in_its_own_section() {
        for field in ConfigField::ALL {
            let (section, other, name) = match field.path().split_once('.') {
                Some(("injection_config", _)) => {
                    (Section::Injection, Section::Context, "injection_config")
                }
                Some(("context_config", _)) => {
                    (Section::Context, Section::Injection, "context_config")
                }
                None => (Section::Session, Section::Injection, ""),
                _ => panic!("{field:?}: {}", field.path()),
            };
            let key = field.key_in(section).unwrap();
            let path = if name.is_empty() { key.into() } else { std::format!("{name}.{key}") };
            assert_eq!(path, field.path());
            assert_eq!(field.key_in(other), None);
            assert_eq!(ConfigField::find(section, |k| k == key), Some(field));
            assert_eq!(field.to_string(), field.path());
        }
        assert_eq!(
            ConfigField::find(Section::Context, |k| k == "context_buffer_ratio"),
            Some(ConfigField::ContextBufferRatio)
        );
        assert_eq!(
            ConfigField::find(Section::Injection, |k| k == "context_buffer_ratio"),
            Some(ConfigField::InjectionContextBufferRatio)
        );
        assert_eq!(ConfigField::find(Section::Injection, |k| k == "trigger_ratio"), None);
        assert_eq!(ConfigField::find(Section::Session, |k| k == "trigger_ratio"), None);
        assert_eq!(ConfigField::find(Section::Context, |k| k == "context_size"), None);
    }

    #[test]
    fn strict_mode_refuses_an_unknown_zone_and_compatible_mode_falls_back_to_utc() {
        let strict = |zone: &'static str| {
            inj(|i| {
                (i.strict, i.timezone) = (true, zone);
            })
        };
        for typo in ["Europe/Berln", "Mars/Base", "America", "europe/berlin", ""] {
            let e = strict(typo).unwrap_err();
            assert_eq!(e, ConfigError::UnknownZoneInStrictMode(ZoneName::new(typo)));
            assert_eq!(
                e.to_string(),
                std::format!(
                    "injection_config.timezone: time zone {typo:?} is not a known IANA zone \
                     (strict mode refuses it; without strict mode the time is computed in UTC, \
                     with a warning, as AgentScope does)"
                )
            );
            // Compatible mode: the reference's fallback, and the warning.
            let valid = inj(|i| i.timezone = typo).unwrap();
            assert_eq!(valid.zone, Zone::Utc);
            let w: std::vec::Vec<_> = valid.warnings().collect();
            assert_eq!(w, [Warning::TimezoneFellBackToUtc], "{typo:?}");
        }
        // Known zones, links and the reference's odd valid names pass.
        for zone in ["UTC", "Europe/Berlin", "US/Eastern", "Etc/GMT+5", "Factory", "EST5EDT"] {
            let valid = strict(zone).unwrap_or_else(|e| panic!("{zone}: {e}"));
            assert_eq!(valid.warnings().count(), 0, "{zone}");
        }
        // A marker is still named as a marker first.
        assert_eq!(
            strict("<UTC>").unwrap_err(),
            ConfigError::AngleBracketInStrictMode(ConfigField::Timezone)
        );
    }

    #[test]
    fn zone_not_compiled_in_names_the_zone_and_the_fix() {
        let e = ConfigError::ZoneNotCompiledIn(ZoneName::new("Asia/Tokyo"));
        let text = e.to_string();
        assert!(
            text.starts_with(
                "injection_config.timezone: \"Asia/Tokyo\" is an IANA zone this build left out"
            ),
            "{text}"
        );
        assert!(
            text.contains("CHRONO_TZ_TIMEZONE_FILTER") && text.contains("^(Asia/Tokyo)$"),
            "{text}"
        );
        assert!(text.contains("filtered_zone_falls_back_to_utc"), "{text}");
    }

    #[test]
    fn zone_name_keeps_32_bytes_at_a_char_boundary() {
        assert_eq!(
            ZoneName::new("America/Argentina/ComodRivadavia").as_str(),
            "America/Argentina/ComodRivadavia"
        );
        assert_eq!(ZoneName::new("ééééééééééééééééé").as_str(), "éééééééééééééééé");
        assert_eq!(ZoneName::new("").as_str(), "");
    }

    #[test]
    fn a_whole_build_resolves_every_zone() {
        // Host builds keep every zone: the error can only come from a
        // filtered device build (tests/footprint checks it on one).
        for tz in chrono_tz::TZ_VARIANTS {
            let config = Config {
                injection: InjectionConfig { timezone: tz.name(), ..Default::default() },
                ..Default::default()
            };
            assert!(config.validate().is_ok(), "{}", tz.name());
        }
    }
}
