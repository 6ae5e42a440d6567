//! Configuration: AgentScope's `InjectionConfig` and `ContextConfig`, the
//! defaults, and envaware's own watches ([`watch`]); what can be wrong with
//! one ([`error`]) and the JSON loader ([`load`]). Validation, which turns a
//! [`Config`] into what the rules read, is the rules' own
//! ([`ValidConfig`](crate::rules::compiled::ValidConfig)).

pub(crate) mod error;
pub(crate) mod load;
pub(crate) mod watch;

use core::fmt;

#[cfg(doc)]
use self::watch::Watch;
use self::watch::WatchList;
use crate::time::DEFAULT_TIME_FORMAT;

/// The reference's default template.
pub const DEFAULT_TEMPLATE: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n{runtime_state}\n</system-reminder>";
/// The reference's default hint for repeated tool failures.
pub const DEFAULT_TOOL_RETRIES_HINT: &str = "The last {count} calls to '{tool_name}' with the same arguments all failed. Stop retrying the same call as-is, check the error message and try a different approach.";
/// The reference's default source of injected hints.
pub const DEFAULT_INJECTION_SOURCE: &str =
    "{\"label\": \"System\", \"sublabel\": \"Runtime State\"}";
/// The reference's default task tool names.
pub const DEFAULT_TASK_TOOL_NAMES: &[&str] = &["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"];
/// The placeholder the template must contain.
pub const RUNTIME_STATE_PLACEHOLDER: &str = "{runtime_state}";

/// A zone name held by value in an error: IANA names are at most 32 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ZoneName {
    bytes: [u8; crate::time::iana::MAX_NAME_LEN],
    len: u8,
}

impl ZoneName {
    /// Keeps `name`, cut at a character boundary to 32 bytes (no IANA name
    /// is longer).
    pub fn new(name: &str) -> Self {
        let mut len = name.len().min(crate::time::iana::MAX_NAME_LEN);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0; crate::time::iana::MAX_NAME_LEN];
        // As `copy_from_slice`, with no length check left to panic.
        bytes
            .iter_mut()
            .zip(name.as_bytes().get(..len).unwrap_or_default())
            .for_each(|(d, s)| *d = *s);
        ZoneName { bytes, len: len as u8 }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        self.bytes
            .get(..usize::from(self.len))
            .and_then(|b| core::str::from_utf8(b).ok())
            .unwrap_or("")
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
        let hit = |n: &str| {
            n.len() == name.len() && n.as_bytes().first() == name.as_bytes().first() && n == name
        };
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
            ExtraFields::Spans { text, spans } => {
                spans.get(i).map(|(k, v)| (k.of(text), v.of(text)))
            }
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
    /// [`Config::validate`] with [`ConfigError::ZoneNotCompiledIn`](crate::ConfigError::ZoneNotCompiledIn).
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
///
/// `ContextConfig::default()` is the reference's default, field by field:
///
/// | field | default | what it means |
/// |---|---|---|
/// | [`trigger_ratio`](Self::trigger_ratio) | `0.8` | AgentScope compresses the context once it holds more than this fraction of the model's context window. The `<context-length>` hint names `int(trigger_ratio * context_size)` as the trigger. Valid in `(0, 0.9]`. |
/// | [`reserve_ratio`](Self::reserve_ratio) | `0.1` | The fraction of the window a compression keeps. envaware only validates it: in `(0, 0.9)` and below `trigger_ratio`. |
/// | [`context_buffer_ratio`](Self::context_buffer_ratio) | `0.2` | How far ahead of the trigger the context length is injected: at the first iteration of a reply (`cur_iter == 0`), once `input_tokens > (trigger_ratio - context_buffer_ratio) * context_size`. Valid in `[0, 1]`, and below `trigger_ratio` while injection or the compression tool is on. The deprecated `injection_config.context_buffer_ratio` overrides it when set. |
/// | [`compression_tool_enabled`](Self::compression_tool_enabled) | `false` | Whether the agent has the `CompressContext` tool: when on and no task is in progress, the `<context-length>` hint suggests the agent judge whether to compress now by calling it. |
///
/// With the defaults and a 128,000-token window the context length is
/// injected above 76,800 input tokens ((0.8 - 0.2) * 128,000), naming a
/// trigger of 102,400:
///
/// ```
/// use envaware::ContextConfig;
///
/// let c = ContextConfig::default();
/// assert_eq!(
///     (c.trigger_ratio, c.reserve_ratio, c.context_buffer_ratio, c.compression_tool_enabled),
///     (0.8, 0.1, 0.2, false)
/// );
/// ```
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
        ContextConfig {
            trigger_ratio: 0.8,
            reserve_ratio: 0.1,
            context_buffer_ratio: 0.2,
            compression_tool_enabled: false,
        }
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
/// [`ValidConfig`](crate::ValidConfig); [`Engine::new`](crate::Engine::new) validates for you.
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

/// The built-in keys, in the reference's dict order.
pub(crate) const BUILTIN_KEYS: [&str; 5] =
    ["current-time", "timezone", "tasks", "context-length", "tool-error"];

/// Whether `key` names a built-in field.
pub(crate) fn is_builtin_key(key: &str) -> bool {
    BUILTIN_KEYS.contains(&key)
}
