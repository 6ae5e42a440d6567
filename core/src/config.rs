//! Configuration: AgentScope's `InjectionConfig` and `ContextConfig`, and
//! their validation.

use core::fmt;

use crate::time::{self, TimeFormatError};
#[cfg(doc)]
use crate::watch::Watch;
use crate::watch::{self, WatchError, WatchList, MAX_WATCHES};

/// The reference's default template.
pub const DEFAULT_TEMPLATE: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n{runtime_state}\n</system-reminder>";
/// The reference's default hint for repeated tool failures.
pub const DEFAULT_TOOL_RETRIES_HINT: &str = "The last {count} calls to '{tool_name}' with the same arguments all failed. Stop retrying the same call as-is, check the error message and try a different approach.";
/// The reference's default source of injected hints.
pub const DEFAULT_INJECTION_SOURCE: &str = "{\"label\": \"System\", \"sublabel\": \"Runtime State\"}";
/// The reference's default time format.
pub const DEFAULT_TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";
/// The reference's default task tool names.
pub const DEFAULT_TASK_TOOL_NAMES: &[&str] = &["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"];
/// The placeholder the template must contain.
pub const RUNTIME_STATE_PLACEHOLDER: &str = "{runtime_state}";

/// A byte range into a text arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Span {
    /// Start byte.
    pub start: u32,
    /// End byte (exclusive).
    pub end: u32,
}

impl Span {
    /// The spanned text, or `""` when the span does not fit `text`.
    pub fn of<'a>(&self, text: &'a str) -> &'a str {
        text.get(self.start as usize..self.end as usize).unwrap_or("")
    }
}

/// A list of strings: borrowed slices, or spans into one text arena (as the
/// JSON loader stores them).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StrList<'a> {
    /// Plain borrowed strings.
    Slice(&'a [&'a str]),
    /// Spans into `text`.
    Spans {
        /// The arena.
        text: &'a str,
        /// One span per string.
        spans: &'a [Span],
    },
}

impl<'a> StrList<'a> {
    /// How many strings.
    pub fn len(&self) -> usize {
        match self {
            StrList::Slice(s) => s.len(),
            StrList::Spans { spans, .. } => spans.len(),
        }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// String `i`.
    pub fn get(&self, i: usize) -> Option<&'a str> {
        match *self {
            StrList::Slice(s) => s.get(i).copied(),
            StrList::Spans { text, spans } => spans.get(i).map(|s| s.of(text)),
        }
    }

    /// The strings, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }

    /// Whether `name` is in the list.
    pub fn contains(&self, name: &str) -> bool {
        // Length and first byte reject most names without a compare call;
        // the scan asks this for every tool call.
        let hit = |n: &str| n.len() == name.len() && n.as_bytes().first() == name.as_bytes().first() && n == name;
        match *self {
            StrList::Slice(names) => names.iter().any(|n| hit(n)),
            StrList::Spans { text, spans } => spans.iter().any(|s| hit(s.of(text))),
        }
    }
}

/// An ordered list of `key: value` string fields.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ExtraFields<'a> {
    /// Plain borrowed pairs.
    Slice(&'a [(&'a str, &'a str)]),
    /// Spans into `text`.
    Spans {
        /// The arena.
        text: &'a str,
        /// One `(key, value)` span pair per field.
        spans: &'a [(Span, Span)],
    },
}

impl<'a> ExtraFields<'a> {
    /// An empty list.
    pub const EMPTY: ExtraFields<'static> = ExtraFields::Slice(&[]);

    /// How many fields.
    pub fn len(&self) -> usize {
        match self {
            ExtraFields::Slice(s) => s.len(),
            ExtraFields::Spans { spans, .. } => spans.len(),
        }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Field `i` as `(key, value)`.
    pub fn get(&self, i: usize) -> Option<(&'a str, &'a str)> {
        match *self {
            ExtraFields::Slice(s) => s.get(i).copied(),
            ExtraFields::Spans { text, spans } => spans.get(i).map(|(k, v)| (k.of(text), v.of(text))),
        }
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

/// AgentScope's `InjectionConfig`, plus envaware's `strict` flag.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct InjectionConfig<'a> {
    /// Whether to inject at all.
    pub inject_runtime_state: bool,
    /// The IANA zone whose wall time is injected.
    pub timezone: &'a str,
    /// The strftime/strptime format of the injected time.
    pub time_format: &'a str,
    /// Hours after which the time is injected again.
    pub time_interval: f64,
    /// Deprecated: overrides the context config's buffer when set.
    pub context_buffer_ratio: Option<f64>,
    /// Consecutive identical failures that trigger the tool-error hint.
    pub tool_retries_limit: u64,
    /// The tool-error hint, with `{tool_name}` and `{count}`.
    pub tool_retries_hint: &'a str,
    /// The hint template, with `{runtime_state}`.
    pub template: &'a str,
    /// The source that marks injected hints.
    pub injection_source: &'a str,
    /// Tools whose calls show the agent knows its tasks.
    pub task_tool_names: StrList<'a>,
    /// Fields attached to every injection (never a trigger).
    pub extra_fields: ExtraFields<'a>,
    /// Whether to emit a `HintBlockEvent` with each injection.
    pub emit_hint_event: bool,
    /// envaware's spoof-proof mode (off by default, as the reference):
    /// only this agent's own hints are read, and extra fields may not carry
    /// the markers the rules look for.
    pub strict: bool,
    /// envaware's own (off by default): an IANA zone this build left out
    /// (the `zone-filter` feature) falls back to UTC with a warning, as the
    /// reference does for an unknown name, instead of failing
    /// [`Config::validate`] with [`ConfigError::ZoneNotCompiledIn`].
    pub filtered_zone_falls_back_to_utc: bool,
    /// envaware's environment-change triggers (none by default): live
    /// fields whose reading, when it moves from what the context last told,
    /// fires a hint by itself (see [`Watch`]).
    pub watch: WatchList<'a>,
}

impl Default for InjectionConfig<'_> {
    fn default() -> Self {
        InjectionConfig {
            inject_runtime_state: true,
            timezone: "UTC",
            time_format: DEFAULT_TIME_FORMAT,
            time_interval: 0.5,
            context_buffer_ratio: None,
            tool_retries_limit: 3,
            tool_retries_hint: DEFAULT_TOOL_RETRIES_HINT,
            template: DEFAULT_TEMPLATE,
            injection_source: DEFAULT_INJECTION_SOURCE,
            task_tool_names: StrList::Slice(DEFAULT_TASK_TOOL_NAMES),
            extra_fields: ExtraFields::EMPTY,
            emit_hint_event: true,
            strict: false,
            filtered_zone_falls_back_to_utc: false,
            watch: WatchList::EMPTY,
        }
    }
}

/// The fields of AgentScope's `ContextConfig` that the rules read or validate.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ContextConfig {
    /// The fraction of the context window at which it is compressed.
    pub trigger_ratio: f64,
    /// The fraction kept by a compression (validated only).
    pub reserve_ratio: f64,
    /// How far ahead of the trigger the context length is injected.
    pub context_buffer_ratio: f64,
    /// Whether the agent has the `CompressContext` tool.
    pub compression_tool_enabled: bool,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig { trigger_ratio: 0.8, reserve_ratio: 0.1, context_buffer_ratio: 0.2, compression_tool_enabled: false }
    }
}

/// Both configurations, as one value: AgentScope's `InjectionConfig` and
/// `ContextConfig`.
///
/// Every field of the reference is here with the same name and default
/// (`Config::default()` is the reference's default configuration).
/// [`Config::validate`] checks what the reference checks (the pydantic field
/// constraints and `Agent._validate_configs`), plus what envaware rejects on
/// purpose because it cannot work as documented (a `time_format` with no
/// date part, a directive whose output would not be byte-identical; the
/// repository's `docs/differences.md` lists each case), and gives a
/// [`ValidConfig`]; [`Engine::new`](crate::Engine::new) validates for you.
/// To read the configuration from AgentScope's JSON, use
/// [`ConfigBuf`](crate::ConfigBuf).
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config<'a> {
    /// The injection configuration.
    pub injection: InjectionConfig<'a>,
    /// The context configuration.
    pub context: ContextConfig,
}

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
}

/// The JSON object a [`ConfigField`] belongs to: the first part of its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
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
    (injection_config { $($i:ident => $ik:literal,)* } context_config { $($c:ident => $ck:literal,)* }) => {
        impl ConfigField {
            /// Every field, in declaration order.
            const ALL: [ConfigField; 19] = [$(ConfigField::$i,)* $(ConfigField::$c,)*];

            /// The field's path as written in JSON, e.g. `injection_config.template`.
            pub fn path(self) -> &'static str {
                match self {
                    $(ConfigField::$i => concat!("injection_config.", $ik),)*
                    $(ConfigField::$c => concat!("context_config.", $ck),)*
                }
            }

            /// The field's key within its section's JSON object
            /// (`template`), if it belongs to `section`.
            pub(crate) fn key_in(self, section: Section) -> Option<&'static str> {
                match (self, section) {
                    $((ConfigField::$i, Section::Injection) => Some($ik),)*
                    $((ConfigField::$c, Section::Context) => Some($ck),)*
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
            ConfigError::TimeFormat(_) | ConfigError::TimeFormatRepeatsDirective => ConfigField::TimeFormat,
            ConfigError::AngleBracketInStrictMode(field) => *field,
            ConfigError::BuiltinKeyInStrictMode => ConfigField::ExtraFields,
            ConfigError::ZoneNotCompiledIn(_) => ConfigField::Timezone,
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
            ConfigError::TooManyWatches(n) => write!(f, "at most {MAX_WATCHES} fields can be watched, got {n}"),
            ConfigError::Watch(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for ConfigError {}

/// A zone name held by value in an error: IANA names are at most 32 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ZoneName {
    bytes: [u8; crate::iana::MAX_NAME_LEN],
    len: u8,
}

impl ZoneName {
    /// Keeps `name`, cut at a character boundary to 32 bytes (no IANA name
    /// is longer).
    pub fn new(name: &str) -> Self {
        let mut len = name.len().min(crate::iana::MAX_NAME_LEN);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0; crate::iana::MAX_NAME_LEN];
        if let (Some(dst), Some(src)) = (bytes.get_mut(..len), name.as_bytes().get(..len)) {
            dst.copy_from_slice(src);
        }
        ZoneName { bytes, len: len as u8 }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        self.bytes.get(..usize::from(self.len)).and_then(|b| core::str::from_utf8(b).ok()).unwrap_or("")
    }
}

impl fmt::Debug for ZoneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ZoneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for ZoneName {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.as_str())
    }
}

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
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Warning::DeprecatedContextBufferRatio => "injection_config.context_buffer_ratio is deprecated, set context_config.context_buffer_ratio instead; it overrides the context config's",
            Warning::TimezoneFellBackToUtc => "injection_config.timezone is not a known IANA zone (or one this build left out, with filtered_zone_falls_back_to_utc); the time is computed in UTC",
            Warning::RecordedTimezoneFellBackToUtc => "the <timezone> recorded in the context is not a known IANA zone; the recorded time was read as UTC",
            Warning::TimeFormatNotParseable => "injection_config.time_format cannot be parsed back (Python's strptime rejects %e), so the time is injected at every step",
            Warning::LiveFieldDropped => "a live field with a built-in key was dropped (strict mode)",
        })
    }
}

/// The built-in keys, in the reference's dict order.
pub(crate) const BUILTIN_KEYS: [&str; 5] = ["current-time", "timezone", "tasks", "context-length", "tool-error"];

/// Whether `key` names a built-in field.
pub(crate) fn is_builtin_key(key: &str) -> bool {
    BUILTIN_KEYS.contains(&key)
}

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
    pub(crate) zone: time::Zone,
    pub(crate) format_parseable: bool,
    /// Where `{runtime_state}` first stands in the template: the length of
    /// the text every hint envaware renders starts with (strict mode reads
    /// fields only after it).
    pub(crate) state_start: usize,
    /// How the tool-error rule compares arguments (the device's capacity
    /// unless [`Engine::with_argument_capacity`](crate::Engine::with_argument_capacity) chose another).
    pub(crate) arguments: crate::args::Comparison,
    /// The time rule's constants (the zone's fixed offset, the longest
    /// elapsed time not due).
    pub(crate) time_rule: crate::rules::TimeRule,
    /// [`ValidConfig::warnings`] as every decision carries them.
    pub(crate) decision_warnings: crate::rules::Warnings,
    /// The bits of the task tool names ([`crate::rules::name_bit`]): a
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
    pub fn zone(&self) -> time::Zone {
        self.zone
    }

    /// The warnings this configuration yields on its own.
    pub fn warnings(&self) -> impl Iterator<Item = Warning> {
        let deprecated = self.config.injection.context_buffer_ratio.is_some();
        let fallback = self.zone == time::Zone::Utc;
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

fn check_ratio(field: ConfigField, value: f64, ok: bool, range: &'static str) -> Result<(), ConfigError> {
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
        let zone = match time::resolve_zone(inj.timezone) {
            Some(zone) => zone,
            None if !inj.filtered_zone_falls_back_to_utc && time::zone_not_compiled_in(inj.timezone) => {
                return Err(ConfigError::ZoneNotCompiledIn(ZoneName::new(inj.timezone)));
            }
            None => time::Zone::Utc,
        };
        let info = time::check_format(inj.time_format).map_err(ConfigError::TimeFormat)?;
        if info.parse_back == time::ParseBack::ReferenceCrashes {
            return Err(ConfigError::TimeFormatRepeatsDirective);
        }
        if inj.time_interval.is_nan() || inj.time_interval < 0.0 {
            return Err(ConfigError::NegativeTimeInterval(inj.time_interval));
        }
        if let Some(b) = inj.context_buffer_ratio {
            check_ratio(ConfigField::InjectionContextBufferRatio, b, (0.0..=1.0).contains(&b), "[0, 1]")?;
        }
        if inj.tool_retries_limit < 3 {
            return Err(ConfigError::ToolRetriesLimitBelow3(inj.tool_retries_limit));
        }
        let Some(state_start) = crate::text::find_bytes(inj.template.as_bytes(), RUNTIME_STATE_PLACEHOLDER.as_bytes()) else {
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
            return Err(ConfigError::BufferNotBelowTrigger { buffer, trigger: t, field: buffer_field });
        }
        // The tag regex cannot cross a newline: such a format never reads back.
        let format_parseable = info.parseable() && !inj.time_format.bytes().any(|b| b == b'\n');
        let time_rule = crate::rules::TimeRule::new(zone, inj.time_interval);
        let mut valid = ValidConfig {
            config: self,
            buffer_ratio: buffer,
            zone,
            format_parseable,
            state_start,
            arguments: Default::default(),
            time_rule,
            decision_warnings: Default::default(),
            task_tool_bits: self.injection.task_tool_names.iter().fold(0, |bits, name| bits | crate::rules::name_bit(name)),
        };
        valid.decision_warnings = crate::rules::Warnings::of(valid.warnings());
        Ok(valid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn with(injection: InjectionConfig<'static>, context: ContextConfig) -> Result<ValidConfig<'static>, ConfigError> {
        Config { injection, context }.validate()
    }

    fn inj(f: impl FnOnce(&mut InjectionConfig<'static>)) -> Result<ValidConfig<'static>, ConfigError> {
        let mut i = InjectionConfig::default();
        f(&mut i);
        with(i, ContextConfig::default())
    }

    fn ctx(f: impl FnOnce(&mut ContextConfig), inject: bool) -> Result<ValidConfig<'static>, ConfigError> {
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
            assert_eq!((list.get(0), list.get(1), list.get(2)), (Some("TaskGet"), Some("plan"), None));
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
        for fields in [ExtraFields::Slice(&[("k", "v")]), ExtraFields::Spans { text, spans: &pairs }] {
            assert_eq!((fields.len(), fields.is_empty()), (1, false));
            assert_eq!((fields.get(0), fields.get(1)), (Some(("k", "v")), None));
            assert_eq!(fields.iter().collect::<std::vec::Vec<_>>(), [("k", "v")]);
        }
        assert!(ExtraFields::EMPTY.is_empty() && ExtraFields::Spans { text, spans: &[] }.is_empty());
        // A span past the text, or off a char boundary, reads as "".
        assert_eq!(Span { start: 12, end: 14 }.of(text), "");
        assert_eq!(Span { start: 0, end: 1 }.of("é"), "");
        assert_eq!(Span { start: 4, end: 7 }.of(text), "Get");
    }

    #[test]
    fn each_warning_says_what_it_is_about() {
        let cases = [
            (Warning::DeprecatedContextBufferRatio, "injection_config.context_buffer_ratio is deprecated"),
            (Warning::TimezoneFellBackToUtc, "injection_config.timezone is not a known IANA zone"),
            (Warning::RecordedTimezoneFellBackToUtc, "the <timezone> recorded in the context"),
            (Warning::TimeFormatNotParseable, "injection_config.time_format cannot be parsed back"),
            (Warning::LiveFieldDropped, "a live field with a built-in key was dropped"),
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
        assert!(matches!(inj(|i| i.time_interval = f64::NAN), Err(E::NegativeTimeInterval(v)) if v.is_nan()));
        assert_eq!(inj(|i| i.template = "no state").unwrap_err(), E::TemplateWithoutPlaceholder);
        assert_eq!(inj(|i| i.template = "ab{runtime_state}{runtime_state}").unwrap().state_start, 2);
        #[cfg(feature = "custom-time-format")]
        {
            assert_eq!(inj(|i| i.time_format = "%Y %Y-%m-%d").unwrap_err(), E::TimeFormatRepeatsDirective);
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
        assert_eq!(inj(|i| i.context_buffer_ratio = Some(0.8)).unwrap_err(), buffer(0.8, ConfigField::InjectionContextBufferRatio));
        assert_eq!(inj(|i| i.context_buffer_ratio = Some(0.3)).unwrap().buffer_ratio(), 0.3);
        // The context configuration's ratios.
        assert!(ctx(|c| c.trigger_ratio = 0.9, true).is_ok());
        assert_eq!(ctx(|c| c.trigger_ratio = 0.91, true).unwrap_err(), range(ConfigField::TriggerRatio, 0.91, "(0, 0.9]"));
        assert_eq!(ctx(|c| c.trigger_ratio = 0.0, true).unwrap_err(), range(ConfigField::TriggerRatio, 0.0, "(0, 0.9]"));
        assert_eq!(ctx(|c| c.reserve_ratio = 0.0, true).unwrap_err(), range(ConfigField::ReserveRatio, 0.0, "(0, 0.9)"));
        assert_eq!(ctx(|c| c.reserve_ratio = 0.9, true).unwrap_err(), range(ConfigField::ReserveRatio, 0.9, "(0, 0.9)"));
        assert!(ctx(|c| (c.trigger_ratio, c.reserve_ratio, c.context_buffer_ratio) = (0.9, 0.89, 0.0), true).is_ok());
        assert_eq!(ctx(|c| c.context_buffer_ratio = -0.1, true).unwrap_err(), range(ConfigField::ContextBufferRatio, -0.1, "[0, 1]"));
        assert_eq!(ctx(|c| c.context_buffer_ratio = 1.1, false).unwrap_err(), range(ConfigField::ContextBufferRatio, 1.1, "[0, 1]"));
        assert_eq!(ctx(|c| c.reserve_ratio = 0.8, true).unwrap_err(), E::ReserveNotBelowTrigger { reserve: 0.8, trigger: 0.8 });
        assert!(ctx(|c| c.reserve_ratio = 0.79, true).is_ok());
        // The buffer must be below the trigger only while injection or the
        // compression tool is on.
        assert_eq!(ctx(|c| c.context_buffer_ratio = 0.8, true).unwrap_err(), buffer(0.8, ConfigField::ContextBufferRatio));
        assert!(ctx(|c| c.context_buffer_ratio = 0.79, true).is_ok());
        assert_eq!(ctx(|c| c.context_buffer_ratio = 1.0, false).unwrap().buffer_ratio(), 1.0);
        let tool_on = |c: &mut ContextConfig| (c.context_buffer_ratio, c.compression_tool_enabled) = (0.8, true);
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
        assert_eq!(strict(|i| i.timezone = "<UTC").unwrap_err(), E::AngleBracketInStrictMode(ConfigField::Timezone));
        assert_eq!(strict(|i| i.timezone = "UTC>").unwrap_err(), E::AngleBracketInStrictMode(ConfigField::Timezone));
        assert_eq!(
            strict(|i| i.extra_fields = ExtraFields::Slice(&[("k", "a>b")])).unwrap_err(),
            E::AngleBracketInStrictMode(ConfigField::ExtraFields)
        );
        assert_eq!(
            strict(|i| i.extra_fields = ExtraFields::Slice(&[("<k", "v")])).unwrap_err(),
            E::AngleBracketInStrictMode(ConfigField::ExtraFields)
        );
        for key in BUILTIN_KEYS {
            let fields: &'static [(&str, &str)] = std::boxed::Box::leak(std::vec![(key, "v")].into_boxed_slice());
            assert_eq!(inj(|i| (i.strict, i.extra_fields) = (true, ExtraFields::Slice(fields))).unwrap_err(), E::BuiltinKeyInStrictMode);
            assert!(inj(|i| i.extra_fields = ExtraFields::Slice(fields)).is_ok());
        }
        assert!(strict(|i| i.extra_fields = ExtraFields::Slice(&[("robot", "R2"), ("tasks-x", "v")])).is_ok());
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
            let all = inj(|i| (i.timezone, i.time_format, i.context_buffer_ratio) = ("Nowhere", "%e %Y-%m", Some(0.1))).unwrap();
            let w: std::vec::Vec<_> = all.warnings().collect();
            assert_eq!(w, [Warning::DeprecatedContextBufferRatio, Warning::TimezoneFellBackToUtc, Warning::TimeFormatNotParseable]);
            // A newline: the tag regex cannot read the time back.
            let w: std::vec::Vec<_> = inj(|i| i.time_format = "%Y-%m-%d\n%H").unwrap().warnings().collect();
            assert_eq!(w, [Warning::TimeFormatNotParseable]);
        }
    }

    #[test]
    fn each_error_names_its_field_first() {
        use ConfigError as E;
        let cases = [
            (E::TemplateWithoutPlaceholder, ConfigField::Template, "must contain the '{runtime_state}' placeholder"),
            (E::ToolRetriesLimitBelow3(2), ConfigField::ToolRetriesLimit, "must be at least 3, got 2"),
            (E::NegativeTimeInterval(-1.5), ConfigField::TimeInterval, "must be >= 0 hours, got -1.5"),
            (
                E::RatioOutOfRange { field: ConfigField::ReserveRatio, value: 0.95, range: "(0, 0.9)" },
                ConfigField::ReserveRatio,
                "must be in (0, 0.9), got 0.95",
            ),
            (
                E::ReserveNotBelowTrigger { reserve: 0.5, trigger: 0.4 },
                ConfigField::ReserveRatio,
                "must be smaller than context_config.trigger_ratio, got 0.5 and 0.4",
            ),
            (
                E::BufferNotBelowTrigger { buffer: 0.5, trigger: 0.4, field: ConfigField::InjectionContextBufferRatio },
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
            (E::BuiltinKeyInStrictMode, ConfigField::ExtraFields, "in strict mode no key may be a built-in one"),
            (E::ZoneNotCompiledIn(ZoneName::new("Asia/Tokyo")), ConfigField::Timezone, "\"Asia/Tokyo\" is an IANA zone"),
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
                Some(("injection_config", _)) => (Section::Injection, Section::Context, "injection_config"),
                Some(("context_config", _)) => (Section::Context, Section::Injection, "context_config"),
                _ => panic!("{field:?}: {}", field.path()),
            };
            let key = field.key_in(section).unwrap();
            assert_eq!(std::format!("{name}.{key}"), field.path());
            assert_eq!(field.key_in(other), None);
            assert_eq!(ConfigField::find(section, |k| k == key), Some(field));
            assert_eq!(field.to_string(), field.path());
        }
        assert_eq!(ConfigField::find(Section::Context, |k| k == "context_buffer_ratio"), Some(ConfigField::ContextBufferRatio));
        assert_eq!(ConfigField::find(Section::Injection, |k| k == "context_buffer_ratio"), Some(ConfigField::InjectionContextBufferRatio));
        assert_eq!(ConfigField::find(Section::Injection, |k| k == "trigger_ratio"), None);
    }

    #[test]
    fn zone_not_compiled_in_names_the_zone_and_the_fix() {
        let e = ConfigError::ZoneNotCompiledIn(ZoneName::new("Asia/Tokyo"));
        let text = e.to_string();
        assert!(text.starts_with("injection_config.timezone: \"Asia/Tokyo\" is an IANA zone this build left out"), "{text}");
        assert!(text.contains("CHRONO_TZ_TIMEZONE_FILTER") && text.contains("^(Asia/Tokyo)$"), "{text}");
        assert!(text.contains("filtered_zone_falls_back_to_utc"), "{text}");
    }

    #[test]
    fn zone_name_keeps_32_bytes_at_a_char_boundary() {
        assert_eq!(ZoneName::new("America/Argentina/ComodRivadavia").as_str(), "America/Argentina/ComodRivadavia");
        assert_eq!(ZoneName::new("ééééééééééééééééé").as_str(), "éééééééééééééééé");
        assert_eq!(ZoneName::new("").as_str(), "");
    }

    #[test]
    fn a_whole_build_resolves_every_zone() {
        // Host builds keep every zone: the error can only come from a
        // filtered device build (tests/footprint checks it on one).
        for tz in chrono_tz::TZ_VARIANTS {
            let config = Config { injection: InjectionConfig { timezone: tz.name(), ..Default::default() }, ..Default::default() };
            assert!(config.validate().is_ok(), "{}", tz.name());
        }
    }
}
