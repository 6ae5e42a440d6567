//! What can be wrong with a configuration, and what a step warns of.

use core::fmt;

use super::ZoneName;
use crate::config::watch::{WatchError, MAX_WATCHES};
use crate::time::TimeFormatError;

/// A configuration field, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[allow(missing_docs)]
pub enum ConfigField {
    InjectRuntimeState,
    Timezone,
    TimeFormat,
    TimeInterval,
    InjectionContextBufferRatio,
    ToolRetriesLimit,
    ToolRetriesHint,
    Template,
    InjectionSource,
    TaskToolNames,
    ExtraFields,
    EmitHintEvent,
    Strict,
    FilteredZoneFallsBackToUtc,
    Watch,
    TriggerRatio,
    ReserveRatio,
    ContextBufferRatio,
    CompressionToolEnabled,
    /// A session document's `agent_name` ([`ConfigBuf::load_session`](crate::ConfigBuf::load_session)).
    AgentName,
    /// A session document's `injection_config`, as a whole.
    InjectionConfig,
    /// A session document's `context_config`, as a whole.
    ContextConfig,
    /// A session document's `context_size`.
    ContextSize,
}

/// The JSON object a [`ConfigField`] belongs to: the first part of its
/// path, or the session document itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// The session document's top level (`agent_name`, ...).
    Session,
    /// `injection_config`.
    Injection,
    /// `context_config`.
    Context,
}

/// The one table of the fields' JSON keys, by section: it writes
/// [`ConfigField::path`] (for messages) and [`ConfigField::key_in`] (for the loader).
/// The keys stand as literals, so that a program that never prints a path
/// does not carry the paths' text.
macro_rules! field_keys {
    (
        injection_config { $($i:ident => $ik:literal,)* }
        context_config { $($c:ident => $ck:literal,)* }
        session { $($s:ident => $sk:literal,)* }
    ) => {
        impl ConfigField {
            /// Every field, in declaration order.
            pub(crate) const ALL: [ConfigField; 23] =
                [$(ConfigField::$i,)* $(ConfigField::$c,)* $(ConfigField::$s,)*];

            /// The field's path as written in JSON, e.g.
            /// `injection_config.template` (a session document's own keys,
            /// `agent_name`, are their own path).
            pub fn path(self) -> &'static str {
                match self {
                    $(ConfigField::$i => concat!("injection_config.", $ik),)*
                    $(ConfigField::$c => concat!("context_config.", $ck),)*
                    $(ConfigField::$s => $sk,)*
                }
            }

            /// The field's key within its section's JSON object
            /// (`template`), if it belongs to `section`.
            pub(crate) fn key_in(self, section: Section) -> Option<&'static str> {
                match (self, section) {
                    $((ConfigField::$i, Section::Injection) => Some($ik),)*
                    $((ConfigField::$c, Section::Context) => Some($ck),)*
                    $((ConfigField::$s, Section::Session) => Some($sk),)*
                    _ => None,
                }
            }
        }
    };
}

field_keys! {
    injection_config {
        InjectRuntimeState => "inject_runtime_state",
        Timezone => "timezone",
        TimeFormat => "time_format",
        TimeInterval => "time_interval",
        InjectionContextBufferRatio => "context_buffer_ratio",
        ToolRetriesLimit => "tool_retries_limit",
        ToolRetriesHint => "tool_retries_hint",
        Template => "template",
        InjectionSource => "injection_source",
        TaskToolNames => "task_tool_names",
        ExtraFields => "extra_fields",
        EmitHintEvent => "emit_hint_event",
        Strict => "strict",
        FilteredZoneFallsBackToUtc => "filtered_zone_falls_back_to_utc",
        Watch => "watch",
    }
    context_config {
        TriggerRatio => "trigger_ratio",
        ReserveRatio => "reserve_ratio",
        ContextBufferRatio => "context_buffer_ratio",
        CompressionToolEnabled => "compression_tool_enabled",
    }
    session {
        AgentName => "agent_name",
        InjectionConfig => "injection_config",
        ContextConfig => "context_config",
        ContextSize => "context_size",
    }
}

impl ConfigField {
    /// The field of `section` whose key `is_key` accepts.
    pub(crate) fn find(section: Section, is_key: impl Fn(&str) -> bool) -> Option<ConfigField> {
        ConfigField::ALL.into_iter().find(|f| f.key_in(section).is_some_and(&is_key))
    }
}

impl fmt::Display for ConfigField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path())
    }
}

/// Why a configuration is invalid.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ConfigError {
    /// The template lacks `{runtime_state}`.
    TemplateWithoutPlaceholder,
    /// `tool_retries_limit` is below 3.
    ToolRetriesLimitBelow3(u64),
    /// `time_interval` is negative or NaN.
    NegativeTimeInterval(f64),
    /// A ratio is outside its range.
    RatioOutOfRange {
        /// Which ratio.
        field: ConfigField,
        /// Its value.
        value: f64,
        /// The allowed range, as text.
        range: &'static str,
    },
    /// `reserve_ratio >= trigger_ratio`.
    ReserveNotBelowTrigger {
        /// The reserve ratio.
        reserve: f64,
        /// The trigger ratio.
        trigger: f64,
    },
    /// `context_buffer_ratio >= trigger_ratio` while injection or the
    /// compression tool is on.
    BufferNotBelowTrigger {
        /// The effective buffer ratio.
        buffer: f64,
        /// The trigger ratio.
        trigger: f64,
        /// Which field supplied the buffer.
        field: ConfigField,
    },
    /// The time format is unusable.
    TimeFormat(TimeFormatError),
    /// A directive repeats (also through `%c`, `%x`, `%X`): Python's strptime
    /// cannot compile the format, and the reference crashes reading it back.
    TimeFormatRepeatsDirective,
    /// In strict mode, configured text that is injected as a value (the
    /// timezone, an extra field's key or value) contains `<` or `>`: it could
    /// open or close a tag the rules read.
    AngleBracketInStrictMode(ConfigField),
    /// In strict mode, an extra field's key is a built-in one
    /// (`current-time`, `timezone`, ...): it would replace the built-in value.
    BuiltinKeyInStrictMode,
    /// The zone is an IANA zone this build left out (the `zone-filter`
    /// feature and `CHRONO_TZ_TIMEZONE_FILTER`), and
    /// `filtered_zone_falls_back_to_utc` is off.
    ZoneNotCompiledIn(ZoneName),
    /// In strict mode, the zone is not an IANA zone (a typo such as
    /// `Europe/Berln`, a tzdata directory such as `America`): outside
    /// strict mode the time is computed in UTC with
    /// [`Warning::TimezoneFellBackToUtc`], as the reference does. The name
    /// is kept up to 32 bytes.
    UnknownZoneInStrictMode(ZoneName),
    /// More fields are watched than [`MAX_WATCHES`].
    TooManyWatches(usize),
    /// A watch is invalid.
    Watch(WatchError),
}

impl ConfigError {
    /// The field the error is about.
    pub fn field(&self) -> ConfigField {
        match self {
            ConfigError::TemplateWithoutPlaceholder => ConfigField::Template,
            ConfigError::ToolRetriesLimitBelow3(_) => ConfigField::ToolRetriesLimit,
            ConfigError::NegativeTimeInterval(_) => ConfigField::TimeInterval,
            ConfigError::RatioOutOfRange { field, .. } => *field,
            ConfigError::ReserveNotBelowTrigger { .. } => ConfigField::ReserveRatio,
            ConfigError::BufferNotBelowTrigger { field, .. } => *field,
            ConfigError::TimeFormat(_) | ConfigError::TimeFormatRepeatsDirective => {
                ConfigField::TimeFormat
            }
            ConfigError::AngleBracketInStrictMode(field) => *field,
            ConfigError::BuiltinKeyInStrictMode => ConfigField::ExtraFields,
            ConfigError::ZoneNotCompiledIn(_) | ConfigError::UnknownZoneInStrictMode(_) => {
                ConfigField::Timezone
            }
            ConfigError::TooManyWatches(_) | ConfigError::Watch(_) => ConfigField::Watch,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let ConfigError::Watch(e) = self {
            return e.fmt(f); // its path goes deeper than the field
        }
        write!(f, "{}: ", self.field())?;
        match self {
            ConfigError::TemplateWithoutPlaceholder => f.write_str("must contain the '{runtime_state}' placeholder"),
            ConfigError::ToolRetriesLimitBelow3(v) => write!(f, "must be at least 3, got {v}"),
            ConfigError::NegativeTimeInterval(v) => write!(f, "must be >= 0 hours, got {v}"),
            ConfigError::RatioOutOfRange { value, range, .. } => {
                write!(f, "must be in {range}, got {value}")
            }
            ConfigError::ReserveNotBelowTrigger { reserve, trigger } => {
                write!(f, "must be smaller than context_config.trigger_ratio, got {reserve} and {trigger}")
            }
            ConfigError::BufferNotBelowTrigger { buffer, trigger, .. } => {
                write!(f, "must be smaller than context_config.trigger_ratio, got {buffer} and {trigger}")
            }
            ConfigError::TimeFormat(e) => write!(f, "{e}"),
            ConfigError::TimeFormatRepeatsDirective => {
                f.write_str("a directive repeats, so the time cannot be parsed back (AgentScope crashes on it)")
            }
            ConfigError::AngleBracketInStrictMode(_) => f.write_str("in strict mode it may not contain '<' or '>'"),
            ConfigError::BuiltinKeyInStrictMode => {
                f.write_str("in strict mode no key may be a built-in one (current-time, timezone, tasks, context-length, tool-error)")
            }
            ConfigError::ZoneNotCompiledIn(name) => write!(
                f,
                "{name:?} is an IANA zone this build left out: add it to CHRONO_TZ_TIMEZONE_FILTER \
                 (under [env] in .cargo/config.toml, e.g. \"^({name})$\") and rebuild, \
                 or set filtered_zone_falls_back_to_utc to compute the time in UTC"
            ),
            ConfigError::UnknownZoneInStrictMode(name) => write!(
                f,
                "time zone {name:?} is not a known IANA zone (strict mode refuses it; \
                 without strict mode the time is computed in UTC, with a warning, as AgentScope does)"
            ),
            ConfigError::TooManyWatches(n) => write!(f, "at most {MAX_WATCHES} fields can be watched, got {n}"),
            ConfigError::Watch(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for ConfigError {}

/// Something the caller should know about a configuration or a step, that
/// does not stop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)] // Warnings keeps one bit per variant, in declaration order
#[non_exhaustive]
pub enum Warning {
    /// `injection_config.context_buffer_ratio` is deprecated; it overrode
    /// the context config's.
    DeprecatedContextBufferRatio,
    /// The configured timezone is unknown (or left out of this build, with
    /// `filtered_zone_falls_back_to_utc`): UTC is used (and the configured
    /// name is still printed in `<timezone>`, as the reference does).
    TimezoneFellBackToUtc,
    /// The timezone recorded in the context is unknown: its time was read as UTC.
    RecordedTimezoneFellBackToUtc,
    /// The time format cannot be parsed back (Python's strptime rejects
    /// `%e`, `%F`, `%T`; the tag regex stops at a newline), so the time is injected at every step, as the reference does.
    TimeFormatNotParseable,
    /// A live field was dropped because its key is a built-in one (strict
    /// mode): it would have replaced the built-in value.
    LiveFieldDropped,
    /// A watched field is not among the step's live fields (a typo such as
    /// `temprature`, or a source that does not provide it): its watch
    /// cannot fire.
    WatchedFieldNotLive,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Warning::DeprecatedContextBufferRatio => "injection_config.context_buffer_ratio is deprecated, set context_config.context_buffer_ratio instead; it overrides the context config's",
            Warning::TimezoneFellBackToUtc => "injection_config.timezone is not a known IANA zone (or one this build left out, with filtered_zone_falls_back_to_utc); the time is computed in UTC",
            Warning::RecordedTimezoneFellBackToUtc => "the <timezone> recorded in the context is not a known IANA zone; the recorded time was read as UTC",
            Warning::TimeFormatNotParseable => "injection_config.time_format cannot be parsed back (Python's strptime rejects %e), so the time is injected at every step",
            Warning::LiveFieldDropped => "a live field with a built-in key was dropped (strict mode)",
            Warning::WatchedFieldNotLive => "a field in injection_config.watch is not among the live fields, so its watch never fires",
        })
    }
}
