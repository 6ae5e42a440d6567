//! Loading the configuration from JSON, with no heap.

use core::fmt::{self, Write};

use crate::config::error::{ConfigField, Section};
use crate::config::watch::{
    Decimal, Interval, Watch, WatchList, WatchParam, WatchPath, MAX_WATCHES,
};
use crate::config::{Config, ContextConfig, ExtraFields, InjectionConfig, Span, StrList, ZoneName};
use crate::json::{self, JsonErrorKind, JsonStr, Kind, Value};
use crate::text::py_strip;

pub(crate) mod session;

/// Deepest nesting accepted in a configuration document, unknown values
/// included: as deep as the reader can check (a bit of stack a level),
/// deeper than Python's `json.loads` reads (about 990 levels, then
/// `RecursionError`), so every configuration the reference loads loads.
const MAX_DEPTH: usize = json::DEPTH_CAPACITY;

/// Why a configuration document could not be loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum LoadError {
    /// Not valid JSON, or nested deeper than 1,024 levels.
    Syntax {
        /// What is wrong.
        kind: JsonErrorKind,
        /// Byte offset of the error.
        offset: usize,
        /// Its line, from 1 (lines end at `\n`).
        line: usize,
        /// Its column, in characters from 1, as Python's `json` counts.
        column: usize,
    },
    /// The document is not a JSON object.
    NotAnObject,
    /// A field has a value of the wrong type, or one lax mode cannot read.
    WrongType {
        /// The field.
        field: ConfigField,
        /// What it must be.
        expected: &'static str,
    },
    /// A string does not fit the arena, or a list is longer than its capacity.
    TooLong {
        /// The field.
        field: ConfigField,
    },
    /// A watch (`injection_config.watch`) or one of its values has the
    /// wrong type.
    WatchValue {
        /// Where.
        path: WatchPath,
        /// What it must be.
        expected: &'static str,
    },
    /// More than [`MAX_WATCHES`] fields are watched.
    TooManyWatches,
    /// A watch holds a key it does not know (`"hysteresys"`): `watch` is
    /// envaware's own, so a typo is refused rather than read as "not set".
    UnknownWatchKey {
        /// The watch.
        path: WatchPath,
        /// The key as written (cut to 32 bytes).
        key: ZoneName,
    },
    /// A session document ([`ConfigBuf::load_session`]) holds a key it
    /// does not have (`"context_sise"`, or the sim's `input_tokens`, a
    /// step's value): refused rather than ignored, as a typo would
    /// otherwise leave the default silently.
    UnknownKey {
        /// The key as written (cut to 32 bytes).
        key: ZoneName,
    },
    /// A session document names one of its keys twice: the two
    /// configurations would be merged, or one value silently dropped.
    DuplicateKey {
        /// The key.
        field: ConfigField,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Syntax { kind, offset, line, column } => {
                write!(f, "invalid JSON at line {line} column {column} (byte {offset}): ")?;
                match kind {
                    JsonErrorKind::TooDeep => write!(f, "nested deeper than {MAX_DEPTH} levels"),
                    _ => write!(f, "{kind}"),
                }
            }
            LoadError::NotAnObject => f.write_str("the configuration must be a JSON object"),
            LoadError::WrongType { field, expected } => write!(f, "{field}: expected {expected}"),
            LoadError::TooLong { field } => {
                write!(f, "{field}: too long for the configuration buffer")
            }
            LoadError::WatchValue { path, expected } => write!(f, "{path}: expected {expected}"),
            LoadError::TooManyWatches => {
                write!(f, "{}: at most {MAX_WATCHES} fields can be watched", ConfigField::Watch)
            }
            LoadError::UnknownWatchKey { path, key } => {
                write!(f, "{path}.{key}: unknown key (a watch has {WATCH_KEYS})")
            }
            LoadError::UnknownKey { key } => {
                write!(f, "{key}: unknown key (a session configuration has {})", session::KEYS)
            }
            LoadError::DuplicateKey { field } => write!(f, "{field}: given twice"),
        }
    }
}

impl core::error::Error for LoadError {}

/// A [`LoadError`] as the loader passes it up: a few words, where `?`
/// copying the public error (a watch's name by value) through every level
/// cost a device about 0.7 KB of flash. A watch is named by its span in
/// the arena, a syntax error's line and column are counted at the end.
#[derive(Clone, Copy)]
enum Fault {
    Syntax(json::JsonError),
    NotAnObject,
    WrongType { field: ConfigField, expected: &'static str },
    TooLong { field: ConfigField },
    WatchValue { name: Span, param: Option<WatchParam>, expected: &'static str },
    TooManyWatches,
    UnknownWatchKey { name: Span, key: ZoneName },
    UnknownKey { key: ZoneName },
    DuplicateKey { field: ConfigField },
}

impl Fault {
    /// The public error: `json_text` is the document, `arena` the text
    /// arena as the load left it.
    fn into_error(self, json_text: &str, arena: &str) -> LoadError {
        match self {
            Fault::Syntax(e) => {
                let (line, column) = e.line_column(json_text);
                LoadError::Syntax { kind: e.kind, offset: e.offset, line, column }
            }
            Fault::NotAnObject => LoadError::NotAnObject,
            Fault::WrongType { field, expected } => LoadError::WrongType { field, expected },
            Fault::TooLong { field } => LoadError::TooLong { field },
            Fault::WatchValue { name, param, expected } => {
                LoadError::WatchValue { path: WatchPath::new(name.of(arena), param), expected }
            }
            Fault::TooManyWatches => LoadError::TooManyWatches,
            Fault::UnknownWatchKey { name, key } => {
                LoadError::UnknownWatchKey { path: WatchPath::new(name.of(arena), None), key }
            }
            Fault::UnknownKey { key } => LoadError::UnknownKey { key },
            Fault::DuplicateKey { field } => LoadError::DuplicateKey { field },
        }
    }
}

/// The keys a watch has, as [`LoadError::UnknownWatchKey`] lists them.
const WATCH_KEYS: &str = "change, above, below, hysteresis, min_interval, max_interval";

/// Owned configuration storage: scalars, plus one text arena of `TEXT`
/// bytes for the strings, up to `NAMES` task tool names and `FIELDS` extra
/// fields, and up to [`MAX_WATCHES`] watches. Fields absent from the JSON keep the reference's defaults.
///
/// Each load appends its strings to the arena and a field loaded again
/// leaves its old text behind: to load a whole new configuration, start
/// from an empty buffer rather than loading into a used one.
///
/// The JSON shapes are AgentScope's (`InjectionConfig`, `ContextConfig`).
/// Values go through pydantic's lax mode as the reference's do: `"0.5"` or
/// `true` for a number, `"4"` or `3.0` for an integer, `"yes"`/`"off"`/`1`
/// for a boolean. Strings are unescaped into one text arena whose size the
/// caller chooses. Unknown keys are ignored.
///
/// Why not serde-json-core: pydantic's lax mode needs to see a value's JSON
/// type before choosing how to read it, and serde-json-core has no
/// `deserialize_any`. The loader reads with the crate's own Python-exact
/// JSON reader, the one the argument comparison uses.
///
/// [`ConfigBuf::new`] makes one of the default sizes (2 KiB of text, 8
/// task tool names, 8 extra fields) with no annotation;
/// [`ConfigBuf::with_capacity`] one of the sizes its type names:
///
/// ```
/// use envaware::ConfigBuf;
///
/// let mut cfg = ConfigBuf::new();
/// cfg.load_injection(r#"{"timezone": "Europe/Berlin"}"#)?;
/// assert_eq!(cfg.config().injection.timezone, "Europe/Berlin");
///
/// // 512 bytes of text, 2 task tool names, 4 extra fields.
/// let mut small = ConfigBuf::<512, 2, 4>::with_capacity();
/// small.load_injection(r#"{"extra_fields": {"robot": "R2", "site": "greenhouse"}}"#)?;
/// assert_eq!(small.config().injection.extra_fields.len(), 2);
/// # Ok::<(), envaware::LoadError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ConfigBuf<const TEXT: usize = 2048, const NAMES: usize = 8, const FIELDS: usize = 8> {
    text: heapless::String<TEXT>,
    values: Values<NAMES, FIELDS>,
}

/// Everything but the text arena: what a load copies to roll back.
#[derive(Debug, Clone)]
struct Values<const NAMES: usize, const FIELDS: usize> {
    inject_runtime_state: bool,
    timezone: Option<Span>,
    time_format: Option<Span>,
    time_interval: f64,
    context_buffer_ratio: Option<f64>,
    tool_retries_limit: u64,
    tool_retries_hint: Option<Span>,
    template: Option<Span>,
    injection_source: Option<Span>,
    task_tool_names: Option<heapless::Vec<Span, NAMES>>,
    extra_fields: heapless::Vec<(Span, Span), FIELDS>,
    watch: heapless::Vec<(Span, Watch), MAX_WATCHES>,
    emit_hint_event: bool,
    strict: bool,
    filtered_zone_falls_back_to_utc: bool,
    context: ContextConfig,
}

impl<const TEXT: usize, const NAMES: usize, const FIELDS: usize> Default
    for ConfigBuf<TEXT, NAMES, FIELDS>
{
    fn default() -> Self {
        Self::with_capacity()
    }
}

/// The default sizes, on their own so that `ConfigBuf::new()` needs no
/// annotation: default const parameters do not drive type inference.
impl ConfigBuf {
    /// The reference's defaults, in a buffer of the default sizes.
    pub fn new() -> Self {
        Self::with_capacity()
    }
}

impl<const TEXT: usize, const NAMES: usize, const FIELDS: usize> ConfigBuf<TEXT, NAMES, FIELDS> {
    const CHECK: () = assert!(TEXT <= u32::MAX as usize, "spans are u32");

    /// The reference's defaults, in a buffer of the sizes its type names
    /// (`ConfigBuf::<TEXT, NAMES, FIELDS>::with_capacity()`).
    pub fn with_capacity() -> Self {
        let () = Self::CHECK;
        let d = InjectionConfig::default();
        let values = Values {
            inject_runtime_state: d.inject_runtime_state,
            timezone: None,
            time_format: None,
            time_interval: d.time_interval,
            context_buffer_ratio: None,
            tool_retries_limit: d.tool_retries_limit,
            tool_retries_hint: None,
            template: None,
            injection_source: None,
            task_tool_names: None,
            extra_fields: heapless::Vec::new(),
            watch: heapless::Vec::new(),
            emit_hint_event: d.emit_hint_event,
            strict: d.strict,
            filtered_zone_falls_back_to_utc: d.filtered_zone_falls_back_to_utc,
            context: ContextConfig::default(),
        };
        ConfigBuf { text: heapless::String::new(), values }
    }

    /// The configuration, borrowing this buffer's strings.
    pub fn config(&self) -> Config<'_> {
        let text = self.text.as_str();
        let v = &self.values;
        let d = InjectionConfig::default();
        let s = |span: Option<Span>, default: &'static str| span.map_or(default, |sp| sp.of(text));
        Config {
            injection: InjectionConfig {
                inject_runtime_state: v.inject_runtime_state,
                timezone: s(v.timezone, d.timezone),
                time_format: s(v.time_format, d.time_format),
                time_interval: v.time_interval,
                context_buffer_ratio: v.context_buffer_ratio,
                tool_retries_limit: v.tool_retries_limit,
                tool_retries_hint: s(v.tool_retries_hint, d.tool_retries_hint),
                template: s(v.template, d.template),
                injection_source: s(v.injection_source, d.injection_source),
                task_tool_names: match &v.task_tool_names {
                    Some(spans) => StrList::Spans { text, spans },
                    None => d.task_tool_names,
                },
                extra_fields: ExtraFields::Spans { text, spans: &v.extra_fields },
                emit_hint_event: v.emit_hint_event,
                strict: v.strict,
                filtered_zone_falls_back_to_utc: v.filtered_zone_falls_back_to_utc,
                watch: WatchList::Spans { text, spans: &v.watch },
            },
            context: v.context,
        }
    }

    /// Reads an `InjectionConfig` JSON object. On error this buffer is
    /// unchanged.
    pub fn load_injection(&mut self, json_text: &str) -> Result<(), LoadError> {
        self.load(json_text, Section::Injection)
    }

    /// Reads a `ContextConfig` JSON object (only the fields the rules use
    /// or validate). On error this buffer is unchanged.
    pub fn load_context(&mut self, json_text: &str) -> Result<(), LoadError> {
        self.load(json_text, Section::Context)
    }

    /// Reads the members of `section` into a copy of the values, and keeps
    /// it only if every member reads. The arena is not copied (it is most
    /// of the buffer, 2 KiB by default, on a device's stack): strings are
    /// only ever appended to it, so a failed load cuts it back to its
    /// length before the load, and the old spans stay as they were.
    fn load(&mut self, json_text: &str, section: Section) -> Result<(), LoadError> {
        self.transaction(json_text, |next, arena, members| next.section(arena, section, members))
    }

    /// Reads the members of the object `json_text` with `read` into a copy
    /// of the values and the arena, and keeps what it read only if it
    /// succeeds (see [`load`](Self::load)).
    fn transaction<R>(
        &mut self,
        json_text: &str,
        read: impl FnOnce(
            &mut Values<NAMES, FIELDS>,
            &mut Arena<'_, TEXT>,
            json::Members<'_>,
        ) -> Result<R, Fault>,
    ) -> Result<R, LoadError> {
        let members = object(json_text).map_err(|f| f.into_error(json_text, ""))?;
        let arena_len = self.text.len();
        let mut next = self.values.clone();
        let read = read(&mut next, &mut Arena(&mut self.text), members);
        // The error names a watch by its span in the arena: read before
        // the arena is cut back.
        let read = read.map_err(|f| f.into_error(json_text, &self.text));
        match read {
            Ok(_) => self.values = next,
            // `arena_len` was a length of this string: a char boundary.
            Err(_) if self.text.is_char_boundary(arena_len) => self.text.truncate(arena_len),
            Err(_) => {}
        }
        read
    }
}

impl<const NAMES: usize, const FIELDS: usize> Values<NAMES, FIELDS> {
    /// Reads the members of a `section` object.
    fn section<const TEXT: usize>(
        &mut self,
        arena: &mut Arena<'_, TEXT>,
        section: Section,
        members: json::Members<'_>,
    ) -> Result<(), Fault> {
        members.into_iter().try_for_each(|(key, value)| {
            match ConfigField::find(section, |k| key.eq_str(k)) {
                Some(field) => self.member(arena, field, value),
                None => Ok(()), // unknown keys are ignored, as pydantic ignores them
            }
        })
    }

    // Out of line: inlined, the copy `load` reads into was split into
    // scalars and put back together field by field.
    #[inline(never)]
    fn member<const TEXT: usize>(
        &mut self,
        arena: &mut Arena<'_, TEXT>,
        field: ConfigField,
        value: Value<'_>,
    ) -> Result<(), Fault> {
        let string = |arena: &mut Arena<'_, TEXT>| arena.push_str(value, field).map(Some);
        match field {
            ConfigField::InjectRuntimeState => self.inject_runtime_state = lax_bool(value, field)?,
            ConfigField::Timezone => self.timezone = string(arena)?,
            ConfigField::TimeFormat => self.time_format = string(arena)?,
            ConfigField::TimeInterval => self.time_interval = lax_float(value, field)?,
            ConfigField::InjectionContextBufferRatio => {
                self.context_buffer_ratio = match value.kind() {
                    Kind::Null => None,
                    _ => Some(lax_float(value, field)?),
                }
            }
            ConfigField::ToolRetriesLimit => self.tool_retries_limit = lax_uint(value, field)?,
            ConfigField::ToolRetriesHint => self.tool_retries_hint = string(arena)?,
            ConfigField::Template => self.template = string(arena)?,
            ConfigField::InjectionSource => self.injection_source = string(arena)?,
            ConfigField::TaskToolNames => self.task_tool_names = Some(names(arena, value)?),
            ConfigField::ExtraFields => self.extra_fields = extra_fields(arena, value)?,
            ConfigField::EmitHintEvent => self.emit_hint_event = lax_bool(value, field)?,
            ConfigField::Strict => self.strict = lax_bool(value, field)?,
            ConfigField::FilteredZoneFallsBackToUtc => {
                self.filtered_zone_falls_back_to_utc = lax_bool(value, field)?
            }
            ConfigField::Watch => self.watch = watches(arena, value)?,
            ConfigField::TriggerRatio => self.context.trigger_ratio = lax_float(value, field)?,
            ConfigField::ReserveRatio => self.context.reserve_ratio = lax_float(value, field)?,
            ConfigField::ContextBufferRatio => {
                self.context.context_buffer_ratio = lax_float(value, field)?
            }
            ConfigField::CompressionToolEnabled => {
                self.context.compression_tool_enabled = lax_bool(value, field)?
            }
            // A session document's own keys, read by `load_session`: never
            // found in a section.
            ConfigField::AgentName
            | ConfigField::InjectionConfig
            | ConfigField::ContextConfig
            | ConfigField::ContextSize => {}
        }
        Ok(())
    }
}

fn names<const TEXT: usize, const NAMES: usize>(
    arena: &mut Arena<'_, TEXT>,
    value: Value<'_>,
) -> Result<heapless::Vec<Span, NAMES>, Fault> {
    const FIELD: ConfigField = ConfigField::TaskToolNames;
    if value.kind() != Kind::Array {
        return Err(Fault::WrongType { field: FIELD, expected: "a list of strings" });
    }
    let mut names = heapless::Vec::new();
    for item in value.items() {
        let span = arena.push_str(item, FIELD)?;
        names.push(span).map_err(|_| Fault::TooLong { field: FIELD })?;
    }
    Ok(names)
}

fn extra_fields<const TEXT: usize, const FIELDS: usize>(
    arena: &mut Arena<'_, TEXT>,
    value: Value<'_>,
) -> Result<heapless::Vec<(Span, Span), FIELDS>, Fault> {
    const FIELD: ConfigField = ConfigField::ExtraFields;
    if value.kind() != Kind::Object {
        return Err(Fault::WrongType { field: FIELD, expected: "an object of string values" });
    }
    let mut fields: heapless::Vec<(Span, Span), FIELDS> = heapless::Vec::new();
    for (key, item) in value.members() {
        let k = arena.push_json_str(key, FIELD)?;
        let v = arena.push_str(item, FIELD)?;
        // A duplicate key keeps its first place and takes the last value,
        // as a Python dict built by json.loads does.
        let text = arena.0.as_str();
        match fields.iter_mut().find(|(old, _)| old.of(text) == k.of(text)) {
            Some(slot) => slot.1 = v,
            None => fields.push((k, v)).map_err(|_| Fault::TooLong { field: FIELD })?,
        }
    }
    Ok(fields)
}

/// `injection_config.watch`: an object of watches by live field name, each
/// an object of decimals. A field named twice keeps its first place and
/// takes the last watch, as a Python dict does.
fn watches<const TEXT: usize>(
    arena: &mut Arena<'_, TEXT>,
    value: Value<'_>,
) -> Result<heapless::Vec<(Span, Watch), MAX_WATCHES>, Fault> {
    const FIELD: ConfigField = ConfigField::Watch;
    if value.kind() != Kind::Object {
        return Err(Fault::WrongType {
            field: FIELD,
            expected: "an object of watches by live field name",
        });
    }
    let mut watches: heapless::Vec<(Span, Watch), MAX_WATCHES> = heapless::Vec::new();
    for (key, item) in value.members() {
        let name = arena.push_json_str(key, FIELD)?;
        let text = arena.0.as_str();
        let watch = watch(name, item)?;
        match watches.iter_mut().find(|(old, _)| old.of(text) == name.of(text)) {
            Some(slot) => slot.1 = watch,
            None => watches.push((name, watch)).map_err(|_| Fault::TooManyWatches)?,
        }
    }
    Ok(watches)
}

/// One watch: `change`, `above`, `below`, `hysteresis`, each a JSON number
/// or a decimal string (`null`: not set). An unknown key is an error.
fn watch(name: Span, value: Value<'_>) -> Result<Watch, Fault> {
    if value.kind() != Kind::Object {
        return Err(Fault::WatchValue {
            name,
            param: None,
            expected:
                "an object with change, above, below, hysteresis, min_interval or max_interval",
        });
    }
    let mut watch = Watch::default();
    for (key, item) in value.members() {
        let Some(param) = WatchParam::ALL.into_iter().find(|p| key.eq_str(p.key())) else {
            return Err(Fault::UnknownWatchKey { name, key: ZoneName::new(key.raw()) });
        };
        if let WatchParam::MinInterval | WatchParam::MaxInterval = param {
            let interval = match item.kind() {
                Kind::Null => None,
                _ => Some(decimal(item).and_then(Interval::from_seconds).ok_or(
                    Fault::WatchValue {
                        name,
                        param: Some(param),
                        expected: "seconds (a JSON number or a decimal string, above 0 and at most 1e9, at most 6 fractional digits)",
                    },
                )?),
            };
            match param {
                WatchParam::MinInterval => watch.min_interval = interval,
                _ => watch.max_interval = interval,
            }
            continue;
        }
        let number = match item.kind() {
            Kind::Null => None,
            _ => Some(decimal(item).ok_or(Fault::WatchValue {
                name,
                param: Some(param),
                expected: "a decimal number (a JSON number or a decimal string, at most 19 integer and 18 fractional digits)",
            })?),
        };
        match param {
            WatchParam::Change => watch.change = number,
            WatchParam::Above => watch.above = number,
            WatchParam::Below => watch.below = number,
            WatchParam::Hysteresis => watch.hysteresis = number.unwrap_or(Decimal::ZERO),
            // Read above.
            WatchParam::MinInterval | WatchParam::MaxInterval => {}
        }
    }
    Ok(watch)
}

/// A JSON number, or a string holding one decimal (surrounding whitespace
/// stripped), read exactly.
fn decimal(value: Value<'_>) -> Option<Decimal> {
    let mut buf = heapless::String::new();
    match value.kind() {
        Kind::Number => Decimal::parse(value.number_text()?),
        Kind::String => Decimal::parse(py_strip(short_str(value, &mut buf)?)),
        _ => None,
    }
}

/// The text arena, written only at its end. A string that fails halfway is
/// left there: the failed load cuts the arena back as a whole.
struct Arena<'t, const TEXT: usize>(&'t mut heapless::String<TEXT>);

impl<const TEXT: usize> Arena<'_, TEXT> {
    fn push_str(&mut self, value: Value<'_>, field: ConfigField) -> Result<Span, Fault> {
        let s = value.as_str().ok_or(Fault::WrongType { field, expected: "a string" })?;
        self.push_json_str(s, field)
    }

    fn push_json_str(&mut self, s: JsonStr<'_>, field: ConfigField) -> Result<Span, Fault> {
        let start = self.0.len();
        let mut w = ArenaWriter { text: &mut *self.0, overflow: false };
        let ok = s.write_to(&mut w).is_ok();
        if w.overflow {
            return Err(Fault::TooLong { field });
        }
        if !ok {
            return Err(Fault::WrongType { field, expected: "a string without lone surrogates" });
        }
        Ok(Span { start: start as u32, end: self.0.len() as u32 })
    }
}

struct ArenaWriter<'t, const N: usize> {
    text: &'t mut heapless::String<N>,
    overflow: bool,
}

impl<const N: usize> Write for ArenaWriter<'_, N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.text.push_str(s).map_err(|_| {
            self.overflow = true;
            fmt::Error
        })
    }
}

fn object(json_text: &str) -> Result<json::Members<'_>, Fault> {
    let doc = json::parse(json_text, MAX_DEPTH).map_err(Fault::Syntax)?;
    if doc.kind() != Kind::Object {
        return Err(Fault::NotAnObject);
    }
    Ok(doc.members())
}

/// A JSON string's text, decoded into a small stack buffer (numbers and
/// booleans given as strings are short).
fn short_str<'b>(value: Value<'_>, buf: &'b mut heapless::String<64>) -> Option<&'b str> {
    let s = value.as_str()?;
    let mut w = ArenaWriter { text: buf, overflow: false };
    s.write_to(&mut w).ok()?;
    Some(buf.as_str())
}

/// pydantic's lax `float`: numbers, booleans, numeric strings.
fn lax_float(value: Value<'_>, field: ConfigField) -> Result<f64, Fault> {
    let err = Fault::WrongType { field, expected: "a number" };
    let mut buf = heapless::String::new();
    match value.kind() {
        Kind::Number => value.number_text().and_then(parse_f64).ok_or(err),
        Kind::Bool(b) => Ok(if b { 1.0 } else { 0.0 }),
        Kind::NaN => Ok(f64::NAN),
        Kind::Infinity => Ok(f64::INFINITY),
        Kind::NegInfinity => Ok(f64::NEG_INFINITY),
        Kind::String => short_str(value, &mut buf).and_then(|s| parse_f64(py_strip(s))).ok_or(err),
        _ => Err(err),
    }
}

/// pydantic's lax `int` (non-negative here: the only int field must be >= 3):
/// integers, floats without a fraction, and integer strings.
fn lax_uint(value: Value<'_>, field: ConfigField) -> Result<u64, Fault> {
    let err = Fault::WrongType { field, expected: "a whole number >= 0" };
    let mut buf = heapless::String::new();
    match value.kind() {
        // pydantic reads True as 1, which fails `>= 3` anyway.
        Kind::Bool(b) => Ok(u64::from(b)),
        Kind::Number => {
            let text = value.number_text().ok_or(err)?;
            if let Ok(n) = text.parse::<u64>() {
                return Ok(n);
            }
            // A JSON float is accepted when it has no fraction (3.0, 3e0).
            parse_f64(text).and_then(whole_u64).ok_or(err)
        }
        Kind::String => {
            short_str(value, &mut buf).and_then(|s| integer_string(py_strip(s))).ok_or(err)
        }
        _ => Err(err),
    }
}

/// `f as u64` when `f` is a whole number in `0..1.8e19` (`(f as u64) as
/// f64 == f`), from its exact parts: no soft-float conversions linked.
fn whole_u64(f: f64) -> Option<u64> {
    if !(0.0..1.8e19).contains(&f) {
        return None;
    }
    let (m, e) = crate::ieee::parts(f);
    match u32::try_from(e) {
        // Below 1.8e19: the shifted mantissa fits.
        Ok(up) => m.checked_shl(up),
        Err(_) => {
            let down = e.unsigned_abs();
            (m == 0 || m.trailing_zeros() >= down).then(|| m.checked_shr(down).unwrap_or(0))
        }
    }
}

/// An integer string as pydantic reads one: `[+]?digits(.0+)?` (`"04"`,
/// `"+3.0"`, `"3.00"`), and nothing else (`"3."`, `"1e1"`, `"0x3"` fail).
fn integer_string(text: &str) -> Option<u64> {
    let text = text.strip_prefix('+').unwrap_or(text);
    let (digits, fraction) = crate::text::split_point(text);
    let whole_fraction =
        text.len() == digits.len() || (!fraction.is_empty() && fraction.bytes().all(|b| b == b'0'));
    if !digits.bytes().all(|b| b.is_ascii_digit()) || !whole_fraction {
        return None;
    }
    // No digits ("", "+", ".0") fail to parse.
    digits.parse().ok()
}

/// `text.parse::<f64>()`: Python's `float(text)` for what pydantic hands it.
#[cfg(feature = "python-floats")]
fn parse_f64(text: &str) -> Option<f64> {
    text.parse().ok()
}

/// Without `python-floats`, [`exact_f64`] instead of core's float parser,
/// whose tables cost about 13 KB of flash.
#[cfg(not(feature = "python-floats"))]
fn parse_f64(text: &str) -> Option<f64> {
    exact_f64(text)
}

/// `text.parse::<f64>()` (the same syntax: sign, `inf`, `infinity`, `nan`,
/// `1.`, `.5`, exponents) where one IEEE operation gives the correctly
/// rounded value (Clinger's fast path: at most 2^53 in the digits, a power
/// of ten up to 10^22), else `None`. Every configuration value people write
/// (`0.8`, `"0.25"`, `4096`, `1e-3`) is on the path; one with more than 15
/// significant digits may not be, and is then rejected naming its field.
#[cfg_attr(feature = "python-floats", allow(dead_code))]
fn exact_f64(text: &str) -> Option<f64> {
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..)?),
        Some(b'+') => (false, text.get(1..)?),
        _ => (false, text),
    };
    let magnitude = if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        f64::INFINITY
    } else if rest.eq_ignore_ascii_case("nan") {
        f64::NAN
    } else {
        exact_decimal(rest)?
    };
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg_attr(feature = "python-floats", allow(dead_code))]
fn exact_decimal(text: &str) -> Option<f64> {
    // Powers of ten up to 10**22 are exact doubles.
    const MAX_POW10: u32 = 22;
    const EXACT: u64 = 1 << 53;
    let (mantissa, exponent) = crate::text::split_exponent(text)?;
    let (int, frac) = crate::text::split_point(mantissa);
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    // The digits as an integer, trailing zeros counted apart so that
    // `0.50000000000000000000` still fits.
    let (mut digits, mut zeros) = (0u64, 0i64);
    for b in int.bytes().chain(frac.bytes()) {
        if b == b'0' {
            zeros += 1;
            continue;
        }
        for _ in 0..=zeros {
            digits = (digits <= u64::MAX / 10).then(|| digits * 10)?;
        }
        digits = digits.checked_add(u64::from(b - b'0'))?;
        zeros = 0;
    }
    if digits == 0 {
        return Some(0.0);
    }
    // The magnitude as a u64, as the other integers here are: one parser
    // linked. An exponent past i64 fails either way.
    let (negative, exp_digits) = exponent.unwrap_or((false, "0"));
    let magnitude = i64::try_from(exp_digits.parse::<u64>().ok()?).ok()?;
    let exp = if negative { -magnitude } else { magnitude };
    let exp10 = exp.checked_add(zeros)?.checked_sub(i64::try_from(frac.len()).ok()?)?;
    if digits > EXACT {
        return None;
    }
    // One IEEE multiplication or division of two exact doubles, rounded
    // as the FPU rounds it, in integers (`ieee`).
    match u32::try_from(exp10) {
        Ok(e) if e <= MAX_POW10 => Some(crate::ieee::times_pow10(digits, e)),
        // 123e25 = 123000e22: still exact when the digits stay below 2^53.
        Ok(e) => {
            let scaled = digits.checked_mul(10u64.checked_pow(e - MAX_POW10)?)?;
            (scaled <= EXACT).then(|| crate::ieee::times_pow10(scaled, MAX_POW10))
        }
        // `digits / 10**k`: by 5**k, then 2**-k.
        Err(_) => {
            let k = u32::try_from(exp10.checked_neg()?).ok().filter(|k| *k <= MAX_POW10)?;
            Some(crate::ieee::div(digits, -(k as i32), 5u64.pow(k)))
        }
    }
}

/// pydantic's lax `bool`.
fn lax_bool(value: Value<'_>, field: ConfigField) -> Result<bool, Fault> {
    let err = Fault::WrongType { field, expected: "a boolean" };
    let mut buf = heapless::String::new();
    match value.kind() {
        Kind::Bool(b) => Ok(b),
        Kind::Number => match value.number_text().and_then(parse_f64) {
            Some(0.0) => Ok(false),
            Some(1.0) => Ok(true),
            _ => Err(err),
        },
        Kind::String => {
            let s = short_str(value, &mut buf).ok_or(err)?;
            const TRUE: [&str; 6] = ["1", "on", "t", "true", "y", "yes"];
            const FALSE: [&str; 6] = ["0", "off", "f", "false", "n", "no"];
            if TRUE.iter().any(|t| t.eq_ignore_ascii_case(s)) {
                Ok(true)
            } else if FALSE.iter().any(|t| t.eq_ignore_ascii_case(s)) {
                Ok(false)
            } else {
                Err(err)
            }
        }
        _ => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::ConfigError;
    use std::string::ToString;

    fn load(json_text: &str) -> Result<Config<'static>, LoadError> {
        let buf: &'static mut ConfigBuf =
            std::boxed::Box::leak(std::boxed::Box::new(ConfigBuf::new()));
        buf.load_injection(json_text)?;
        Ok(buf.config())
    }

    /// The error a watch configuration gives, loaded then validated.
    fn watch_error(watch: &str) -> std::string::String {
        let json = std::format!(r#"{{"extra_fields": {{"robot": "R2"}}, "watch": {watch}}}"#);
        match load(&json) {
            Err(e) => e.to_string(),
            Ok(config) => config
                .validate()
                .map(|_| std::string::String::new())
                .unwrap_or_else(|e| e.to_string()),
        }
    }

    #[test]
    fn watches_load_as_numbers_or_decimal_strings_in_order() {
        let c = load(
            r#"{"watch": {"temperature": {"change": 2.0, "above": "28", "hysteresis": " 0.5 "},
                                   "door": {"below": -1e1, "change": null},
                                   "temperature": {"change": "2.00", "above": 28.0, "hysteresis": 0.5}}}"#,
        )
        .unwrap();
        let d = |t: &str| Decimal::parse(t).unwrap();
        let w = c.injection.watch;
        assert_eq!(w.len(), 2);
        let t = Watch {
            change: Some(d("2")),
            above: Some(d("28")),
            below: None,
            hysteresis: d("0.5"),
            ..Default::default()
        };
        assert_eq!(w.get(0), Some(("temperature", t)));
        assert_eq!(w.get(1), Some(("door", Watch { below: Some(d("-10")), ..Watch::default() })));
        assert!(crate::engine::Engine::new(c).is_ok());
        // No watch: none configured.
        assert!(load("{}").unwrap().injection.watch.is_empty());
    }

    /// One test per class of bad watch configuration: each names its path.
    #[test]
    fn each_bad_watch_gives_its_typed_error_naming_the_path() {
        for (watch, message) in [
            (r#"[]"#, "injection_config.watch: expected an object of watches by live field name"),
            (r#"{"t": 2}"#, "injection_config.watch.t: expected an object with change, above, below, hysteresis, min_interval or max_interval"),
            (r#"{"t": {"change": "two"}}"#, "injection_config.watch.t.change: expected a decimal number (a JSON number or a decimal string, at most 19 integer and 18 fractional digits)"),
            (r#"{"t": {"above": true}}"#, "injection_config.watch.t.above: expected a decimal number (a JSON number or a decimal string, at most 19 integer and 18 fractional digits)"),
            (r#"{"t": {"below": 1e400}}"#, "injection_config.watch.t.below: expected a decimal number (a JSON number or a decimal string, at most 19 integer and 18 fractional digits)"),
            (r#"{"t": {"hysteresis": "0.0000000000000000001", "change": 1}}"#, "injection_config.watch.t.hysteresis: expected a decimal number (a JSON number or a decimal string, at most 19 integer and 18 fractional digits)"),
            (r#"{"a": {"change": 1}, "b": {"change": 1}, "c": {"change": 1}, "d": {"change": 1}, "e": {"change": 1}}"#, "injection_config.watch: at most 4 fields can be watched"),
            (r#"{"temperature": {"change": -1}}"#, "injection_config.watch.temperature.change: must be greater than 0, got -1"),
            (r#"{"temperature": {"change": "0"}}"#, "injection_config.watch.temperature.change: must be greater than 0, got 0"),
            (r#"{"temperature": {"above": 28, "hysteresis": -0.5}}"#, "injection_config.watch.temperature.hysteresis: must be at least 0, got -0.5"),
            (r#"{"temperature": {"hysteresis": 1}}"#, "injection_config.watch.temperature: needs at least one of change, above, below, min_interval, max_interval"),
            (r#"{"robot": {"change": 1}}"#, "injection_config.watch.robot: is an extra field, which never changes: only a live field can be watched"),
            (r#"{"tasks": {"change": 1}}"#, "injection_config.watch.tasks: is a built-in field (current-time, timezone, tasks, context-length, tool-error): only a live field can be watched"),
            (r#"{"temperature": {"above": 28, "hysteresys": 0.5}}"#, "injection_config.watch.temperature.hysteresys: unknown key (a watch has change, above, below, hysteresis, min_interval, max_interval)"),
            (r#"{"t": {"change": 1, "Change": 2}}"#, "injection_config.watch.t.Change: unknown key (a watch has change, above, below, hysteresis, min_interval, max_interval)"),
            (r#"{"a>b": {"change": 1}}"#, "injection_config.watch.a>b: a watched field's name may not contain '<' or '>'"),
            (r#"{"abcdefghijklmnopqrstuvwxyz0123456": {"change": 1}}"#, "injection_config.watch.abcdefghijklmnopqrstuvwxyz012345…: a watched field's name may be at most 32 bytes"),
        ] {
            assert_eq!(watch_error(watch), message, "{watch}");
        }
        let err =
            load(r#"{"watch": {"temperature": {"change": -1}}}"#).unwrap().validate().unwrap_err();
        let ConfigError::Watch(e) = err else { panic!("{err:?}") };
        assert_eq!(
            (e.path.name(), e.path.param(), e.problem),
            (
                "temperature",
                Some(WatchParam::Change),
                crate::config::watch::WatchProblem::NotPositive(Decimal::parse("-1").unwrap())
            )
        );
        assert_eq!(err.field(), ConfigField::Watch);
        // A failed load leaves the buffer as it was.
        let mut buf: ConfigBuf = ConfigBuf::new();
        buf.load_injection(r#"{"watch": {"t": {"change": 1}}}"#).unwrap();
        // The error names the watch of this load, after the last one's text.
        let err = buf
            .load_injection(r#"{"template": "{runtime_state}", "watch": {"uv": {"change": "x"}}}"#)
            .unwrap_err();
        assert!(
            err.to_string().starts_with("injection_config.watch.uv.change: expected a decimal"),
            "{err}"
        );
        assert_eq!(buf.config().injection.watch.get(0).map(|(n, _)| n), Some("t"));
    }

    /// Watches set in code are validated as loaded ones; too many is its own error.
    #[test]
    fn watches_set_in_code_are_validated_too() {
        let w = Watch { change: Decimal::new(1, 0), ..Watch::default() };
        let five = [("a", w), ("b", w), ("c", w), ("d", w), ("e", w)];
        let config = |list| Config {
            injection: InjectionConfig { watch: WatchList::Slice(list), ..Default::default() },
            ..Default::default()
        };
        let err = config(&five).validate().unwrap_err();
        assert_eq!(
            (err, err.to_string().as_str()),
            (
                ConfigError::TooManyWatches(5),
                "injection_config.watch: at most 4 fields can be watched, got 5"
            )
        );
        assert!(config(&five[..4]).validate().is_ok());
    }

    #[test]
    fn whole_floats_convert_as_the_float_casts_do() {
        let cast =
            |f: f64| ((0.0..1.8e19).contains(&f) && (f as u64) as f64 == f).then_some(f as u64);
        let edges = [
            0.0,
            -0.0,
            0.5,
            1.0,
            3.0,
            3.5,
            1e-320,
            4503599627370495.5,
            9007199254740993.0,
            1.8e19,
            1.7999999999999998e19,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let random = (0..20_000).map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            f64::from_bits(state)
        });
        let below = (0..2000).map(|i| f64::from(i) / 8.0).chain((0..64).map(|k| 2f64.powi(k)));
        let wide = (0..64u32)
            .flat_map(|k| [(u64::MAX >> k) as f64, (0x1234_5678_9abc_def1u64 >> k) as f64 + 0.5]);
        for f in edges.into_iter().chain(random).chain(below).chain(wide).chain([
            f64::NAN,
            f64::INFINITY,
            -1.0,
        ]) {
            assert_eq!(whole_u64(f), cast(f), "{f:e}");
        }
    }

    #[test]
    fn lax_values_are_read_as_pydantic_reads_them() {
        let c = load(
            r#"{"time_interval": "0.5", "tool_retries_limit": "4", "emit_hint_event": "off",
                         "inject_runtime_state": "YES"}"#,
        )
        .unwrap();
        assert_eq!(c.injection.time_interval, 0.5);
        assert_eq!(c.injection.tool_retries_limit, 4);
        assert!(!c.injection.emit_hint_event);
        assert!(c.injection.inject_runtime_state);
        for (text, limit) in
            [("\"04\"", Some(4)), ("\" +3.0 \"", Some(3)), ("\"3.00\"", Some(3)), ("3e0", Some(3))]
                .into_iter()
                .chain([
                    ("\"3.\"", None),
                    ("\"1e1\"", None),
                    ("\"0x3\"", None),
                    ("\"-3\"", None),
                    ("\"+\"", None),
                    ("\".0\"", None),
                    ("\"\"", None),
                    ("3.5", None),
                ])
        {
            let got = load(&std::format!("{{\"tool_retries_limit\": {text}}}"))
                .ok()
                .map(|c| c.injection.tool_retries_limit);
            assert_eq!(got, limit, "{text}");
        }
        for (text, value) in [
            ("1", Some(true)),
            ("1.0", Some(true)),
            ("0", Some(false)),
            ("-0.0", Some(false)),
            ("2", None),
            ("0.5", None),
        ] {
            let got =
                load(&std::format!("{{\"strict\": {text}}}")).ok().map(|c| c.injection.strict);
            assert_eq!(got, value, "{text}");
        }
        let c = load(r#"{"tool_retries_limit": 3.0, "time_interval": true, "emit_hint_event": 0}"#)
            .unwrap();
        assert_eq!(c.injection.tool_retries_limit, 3);
        assert_eq!(c.injection.time_interval, 1.0);
        assert!(!c.injection.emit_hint_event);
        assert!(!c.injection.filtered_zone_falls_back_to_utc);
        assert!(
            load(r#"{"filtered_zone_falls_back_to_utc": "on"}"#)
                .unwrap()
                .injection
                .filtered_zone_falls_back_to_utc
        );
        // pydantic reads a boolean as 0 or 1 (which then fails `>= 3`).
        assert_eq!(
            load(r#"{"tool_retries_limit": true}"#).unwrap().injection.tool_retries_limit,
            1
        );
        assert_eq!(
            load(r#"{"tool_retries_limit": false}"#).unwrap().injection.tool_retries_limit,
            0
        );
        // Python's json reads NaN and the infinities; pydantic takes them as floats.
        let c = load(r#"{"time_interval": NaN, "context_buffer_ratio": -Infinity}"#).unwrap();
        assert!(c.injection.time_interval.is_nan());
        assert_eq!(c.injection.context_buffer_ratio, Some(f64::NEG_INFINITY));
        assert_eq!(
            load(r#"{"time_interval": Infinity}"#).unwrap().injection.time_interval,
            f64::INFINITY
        );
    }

    #[test]
    fn exact_floats_agree_with_core_where_they_answer() {
        let on_path = [
            "0.8",
            "0.25",
            "4096",
            "1e-3",
            "-0.0",
            "+.5",
            "1.",
            "0.50000000000000000000",
            "123e25",
            "9007199254740992",
            "1E22",
            "inf",
            "-Infinity",
            "NaN",
        ];
        for text in on_path {
            let want: f64 = text.parse().unwrap();
            let got = exact_f64(text).unwrap_or_else(|| panic!("{text}: off the fast path"));
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{text}");
        }
        for text in
            ["", ".", "e5", "1e", "1e+", "0e", "0e-", "0.0E+", "1.5.2", "0x10", "1_0", " 1", "--1"]
        {
            assert_eq!(exact_f64(text), None, "{text:?}");
            assert!(text.parse::<f64>().is_err(), "{text:?}");
        }
        // Off the fast path: refused rather than rounded twice.
        for text in ["0.30000000000000004441", "9007199254740993", "1e-23", "1e400"] {
            assert_eq!(exact_f64(text), None, "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn exact_floats_are_correctly_rounded(digits in 0u64..1 << 54, exp in -30i32..30, frac in 0usize..20) {
            let s = std::format!("{digits}");
            let text = if frac < s.len() { std::format!("{}.{}e{exp}", &s[..s.len() - frac], &s[s.len() - frac..]) } else { std::format!("{s}e{exp}") };
            if let Some(got) = exact_f64(&text) {
                proptest::prop_assert_eq!(got.to_bits(), text.parse::<f64>().unwrap().to_bits(), "{}", text);
            }
        }
    }

    #[test]
    fn each_bad_value_names_its_field() {
        for (doc, field) in [
            (r#"{"time_interval": "soon"}"#, ConfigField::TimeInterval),
            (r#"{"tool_retries_limit": 3.5}"#, ConfigField::ToolRetriesLimit),
            (r#"{"emit_hint_event": " yes"}"#, ConfigField::EmitHintEvent),
            (r#"{"timezone": 8}"#, ConfigField::Timezone),
            (r#"{"task_tool_names": "TaskList"}"#, ConfigField::TaskToolNames),
            (r#"{"extra_fields": {"a": 1}}"#, ConfigField::ExtraFields),
        ] {
            match load(doc) {
                Err(LoadError::WrongType { field: f, .. }) => assert_eq!(f, field, "{doc}"),
                other => panic!("{doc}: {other:?}"),
            }
        }
        assert_eq!(
            load("{").unwrap_err(),
            LoadError::Syntax { kind: JsonErrorKind::ExpectedKey, offset: 1, line: 1, column: 2 }
        );
        assert_eq!(load("[]").unwrap_err(), LoadError::NotAnObject);
        for (err, text) in [
            (
                LoadError::Syntax {
                    kind: JsonErrorKind::ExpectedValue,
                    offset: 7,
                    line: 2,
                    column: 3,
                },
                "invalid JSON at line 2 column 3 (byte 7): expecting value",
            ),
            (
                LoadError::Syntax {
                    kind: JsonErrorKind::TooDeep,
                    offset: 1030,
                    line: 1,
                    column: 1031,
                },
                "invalid JSON at line 1 column 1031 (byte 1030): nested deeper than 1024 levels",
            ),
            (LoadError::NotAnObject, "the configuration must be a JSON object"),
            (
                LoadError::WrongType { field: ConfigField::Strict, expected: "a boolean" },
                "injection_config.strict: expected a boolean",
            ),
            (
                LoadError::TooLong { field: ConfigField::TriggerRatio },
                "context_config.trigger_ratio: too long for the configuration buffer",
            ),
        ] {
            assert_eq!(std::format!("{err}"), text);
        }
    }

    #[test]
    fn unknown_values_of_any_depth_python_reads_are_ignored_and_deeper_is_named() {
        // The configuration object is level 1: an unknown key holding 1,023
        // levels is the deepest the reader checks (Python stops near 990).
        let nested = |levels: usize| {
            std::format!(
                r#"{{"timezone": "UTC", "x": {{"y": {}{}}}}}"#,
                "[".repeat(levels - 2),
                "]".repeat(levels - 2)
            )
        };
        for levels in [9, 100, 1024] {
            assert_eq!(
                load(&nested(levels)).map(|c| c.injection.timezone),
                Ok("UTC"),
                "{levels} levels"
            );
        }
        let err = load(&nested(1025)).unwrap_err();
        assert_eq!(
            err,
            LoadError::Syntax { kind: JsonErrorKind::TooDeep, offset: 1053, line: 1, column: 1054 }
        );
        assert!(std::format!("{err}").ends_with("nested deeper than 1024 levels"), "{err}");
        // A document over several lines: the line, and the column in characters.
        let err = load("{\n  \"timezone\": \"é\",\n  \"x\": \"é\" ]\n}").unwrap_err();
        assert_eq!(
            err,
            LoadError::Syntax {
                kind: JsonErrorKind::ExpectedCommaOrEnd,
                offset: 34,
                line: 3,
                column: 12
            }
        );
    }

    #[test]
    fn escapes_are_unescaped_and_duplicates_keep_their_place() {
        let c = load(r#"{"template": "a\n{runtime_state}\u00e9", "extra_fields": {"x": "1", "y": "2", "x": "3"}}"#).unwrap();
        assert_eq!(c.injection.template, "a\n{runtime_state}é");
        let fields: std::vec::Vec<_> = c.injection.extra_fields.iter().collect();
        assert_eq!(fields, [("x", "3"), ("y", "2")]);
    }

    #[test]
    fn a_failed_load_leaves_the_buffer_unchanged() {
        let mut buf: ConfigBuf<96, 2, 2> = ConfigBuf::with_capacity();
        buf.load_injection(r#"{"timezone": "Asia/Tokyo", "task_tool_names": ["Plan"], "extra_fields": {"robot": "R2"}}"#).unwrap();
        buf.load_context(r#"{"trigger_ratio": 0.7}"#).unwrap();
        let before = std::format!("{buf:?}");
        // Each document changes scalars, strings, names and fields before
        // it fails: in the last member, or halfway through a string.
        let everything = r#""inject_runtime_state": false, "time_interval": 2, "tool_retries_limit": 9,
            "context_buffer_ratio": 0.1, "strict": true, "emit_hint_event": false,
            "filtered_zone_falls_back_to_utc": true, "timezone": "Europe/Paris", "time_format": "%Y",
            "tool_retries_hint": "h", "injection_source": "s", "task_tool_names": ["A", "B"],
            "extra_fields": {"k": "v"}"#;
        let long = "x".repeat(80);
        for (tail, err) in [
            (
                std::format!(r#""template": "{long}{{runtime_state}}""#),
                LoadError::TooLong { field: ConfigField::Template },
            ),
            (
                std::format!(r#""extra_fields": {{"a": "{long}"}}"#),
                LoadError::TooLong { field: ConfigField::ExtraFields },
            ),
            (
                r#""task_tool_names": ["A", "B", "C"]"#.into(),
                LoadError::TooLong { field: ConfigField::TaskToolNames },
            ),
            (
                r#""extra_fields": {"a": "1", "b": "2", "c": "3"}"#.into(),
                LoadError::TooLong { field: ConfigField::ExtraFields },
            ),
            (
                r#""strict": "maybe""#.into(),
                LoadError::WrongType { field: ConfigField::Strict, expected: "a boolean" },
            ),
            (
                r#""template": "\ud800""#.into(),
                LoadError::WrongType {
                    field: ConfigField::Template,
                    expected: "a string without lone surrogates",
                },
            ),
        ] {
            let doc = std::format!("{{{everything}, {tail}}}");
            assert_eq!(buf.load_injection(&doc), Err(err), "{tail}");
            assert_eq!(std::format!("{buf:?}"), before, "{tail}");
        }
        let doc = r#"{"trigger_ratio": 0.5, "reserve_ratio": 0.2, "compression_tool_enabled": true, "context_buffer_ratio": "x"}"#;
        assert_eq!(
            buf.load_context(doc),
            Err(LoadError::WrongType {
                field: ConfigField::ContextBufferRatio,
                expected: "a number"
            })
        );
        assert_eq!(std::format!("{buf:?}"), before);
        let c = buf.config();
        assert_eq!(
            (c.injection.timezone, c.injection.task_tool_names.get(0), c.context.trigger_ratio),
            ("Asia/Tokyo", Some("Plan"), 0.7)
        );
        assert_eq!(c.injection.extra_fields.get(0), Some(("robot", "R2")));
        // The same members without the failing one load, and the arena
        // goes on from where the first load left it.
        buf.load_injection(r#"{"timezone": "Europe/Paris", "strict": true}"#).unwrap();
        assert_eq!(
            (buf.config().injection.timezone, buf.config().injection.strict),
            ("Europe/Paris", true)
        );
        assert_eq!(buf.text.as_str(), "Asia/TokyoPlanrobotR2Europe/Paris");
    }

    #[test]
    fn every_field_loads_from_its_own_key() {
        let mut buf: ConfigBuf = ConfigBuf::new();
        buf.load_injection(
            r#"{"inject_runtime_state": false, "timezone": "Asia/Tokyo", "time_format": "%Y-%m-%d %H", "time_interval": 2,
                "context_buffer_ratio": 0.1, "tool_retries_limit": 5, "tool_retries_hint": "h {count}", "template": "t {runtime_state}",
                "injection_source": "src", "task_tool_names": ["Plan"], "extra_fields": {"k": "v"}, "emit_hint_event": false,
                "strict": true, "filtered_zone_falls_back_to_utc": true, "trigger_ratio": 0.1, "reserve_ratio": 0.01}"#,
        )
        .unwrap();
        buf.load_context(r#"{"trigger_ratio": 0.7, "reserve_ratio": 0.3, "context_buffer_ratio": 0.4, "compression_tool_enabled": true, "strict": false}"#)
            .unwrap();
        let Config { injection: i, context: c } = buf.config();
        assert_eq!(
            (i.inject_runtime_state, i.timezone, i.time_format, i.time_interval),
            (false, "Asia/Tokyo", "%Y-%m-%d %H", 2.0)
        );
        assert_eq!(
            (i.context_buffer_ratio, i.tool_retries_limit, i.tool_retries_hint),
            (Some(0.1), 5, "h {count}")
        );
        assert_eq!(
            (i.template, i.injection_source, i.task_tool_names.get(0), i.task_tool_names.len()),
            ("t {runtime_state}", "src", Some("Plan"), 1)
        );
        assert_eq!(
            (i.extra_fields.get(0), i.emit_hint_event, i.strict, i.filtered_zone_falls_back_to_utc),
            (Some(("k", "v")), false, true, true)
        );
        // Each section reads only its own keys.
        assert_eq!(
            c,
            ContextConfig {
                trigger_ratio: 0.7,
                reserve_ratio: 0.3,
                context_buffer_ratio: 0.4,
                compression_tool_enabled: true
            }
        );
        buf.load_injection(r#"{"context_buffer_ratio": null}"#).unwrap();
        assert_eq!(buf.config().injection.context_buffer_ratio, None);
    }

    #[test]
    fn loaded_configuration_is_validated_with_a_named_error() {
        let mut buf: ConfigBuf = ConfigBuf::new();
        buf.load_injection(r#"{"template": "no placeholder"}"#).unwrap();
        let err = buf.config().validate().unwrap_err();
        assert_eq!(err, ConfigError::TemplateWithoutPlaceholder);
        assert!(std::format!("{err}").starts_with("injection_config.template:"));
        let mut buf: ConfigBuf = ConfigBuf::new();
        buf.load_context(r#"{"trigger_ratio": 0.5, "context_buffer_ratio": "0.5"}"#).unwrap();
        let err = buf.config().validate().unwrap_err();
        assert_eq!(err.field(), ConfigField::ContextBufferRatio);
    }

    mod never_panics {
        use super::*;
        use crate::clock::FixedClock;
        use crate::clock::Timestamp;
        use crate::conversation::SliceConversation;
        use crate::engine::Engine;
        use crate::rules::Step;
        use proptest::prelude::*;

        const KEYS: &[&str] = &[
            "inject_runtime_state",
            "timezone",
            "time_format",
            "time_interval",
            "context_buffer_ratio",
            "tool_retries_limit",
            "tool_retries_hint",
            "template",
            "injection_source",
            "task_tool_names",
            "extra_fields",
            "emit_hint_event",
            "strict",
            "filtered_zone_falls_back_to_utc",
            "trigger_ratio",
            "reserve_ratio",
            "compression_tool_enabled",
            "unknown",
        ];

        fn json_value() -> impl Strategy<Value = std::string::String> {
            let leaf = prop_oneof![
                Just("null".into()),
                Just("true".into()),
                Just("NaN".into()),
                Just("-Infinity".into()),
                any::<f64>().prop_map(|f| std::format!("{f:?}")),
                any::<i64>().prop_map(|i| std::format!("{i}")),
                "[ -~]{0,12}".prop_map(|s| std::format!("{:?}", s)),
                "%[a-zA-Z%]( ?%[a-zA-Z])*".prop_map(|s| std::format!("{s:?}")),
                Just(r#""{runtime_state}\n\u00e9\ud83d\ude00""#.into()),
                Just(r#""\ud800""#.into()),
            ];
            leaf.prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4)
                        .prop_map(|v| std::format!("[{}]", v.join(","))),
                    proptest::collection::vec(("[a-z]{1,3}", inner), 0..4).prop_map(|v| {
                        let members: std::vec::Vec<_> =
                            v.iter().map(|(k, v)| std::format!("{k:?}: {v}")).collect();
                        std::format!("{{{}}}", members.join(", "))
                    }),
                ]
            })
        }

        fn config_doc() -> impl Strategy<Value = std::string::String> {
            proptest::collection::vec((proptest::sample::select(KEYS), json_value()), 0..6)
                .prop_map(|members| {
                    let members: std::vec::Vec<_> =
                        members.iter().map(|(k, v)| std::format!("{k:?}: {v}")).collect();
                    std::format!("{{{}}}", members.join(", "))
                })
        }

        fn exercise(doc: &str) {
            let mut buf: ConfigBuf<128, 2, 2> = ConfigBuf::with_capacity();
            let _ = buf.load_injection(doc);
            let _ = buf.load_context(doc);
            let mut session: ConfigBuf<128, 2, 2> = ConfigBuf::with_capacity();
            let wrapped = std::format!(
                r#"{{"agent_name": "a", "injection_config": {doc}, "context_config": {doc}}}"#
            );
            for text in [doc, wrapped.as_str()] {
                if let Ok(s) = session.load_session(text) {
                    let _ = Engine::new(s.config);
                }
            }
            if let Ok(engine) = Engine::new(buf.config()) {
                let step = Step {
                    agent_name: "a",
                    tasks: Default::default(),
                    cur_iter: 0,
                    input_tokens: i64::MAX,
                    context_size: i64::MIN,
                };
                let mut out = [0u8; 256];
                let _ = engine.step(
                    &SliceConversation(&[]),
                    &step,
                    &mut FixedClock::at(Timestamp(i64::MAX)),
                    &mut (),
                    &mut out,
                );
                let _ = engine.step(
                    &SliceConversation(&[]),
                    &step,
                    &mut FixedClock::at(Timestamp(i64::MIN)),
                    &mut (),
                    &mut out,
                );
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn on_arbitrary_text(doc in "\\PC{0,64}") {
                exercise(&doc);
            }

            #[test]
            fn on_config_shaped_json(doc in config_doc()) {
                exercise(&doc);
            }
        }
    }
}
