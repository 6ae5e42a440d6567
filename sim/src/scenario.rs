//! Scenarios (`docs/scenario-format.md`, v1): one JSON object holding
//! everything the rules read at one reasoning step, evaluated by the core.

use envaware::args::HostCapacity;
use envaware::ConfigBuf;
use envaware::{Block, Conversation, CreatedAt, HintText, Message, Role, ToolResultState};
use envaware::{
    Config, ConfigError, Engine, FixedClock, LiveFields, Step, TaskCounts, Timestamp, UNAVAILABLE,
};
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The configuration buffer the sim uses: generous, since it runs on a host.
pub type SimConfigBuf = ConfigBuf<65536, 64, 64>;

/// A scenario's keys, each read by its type ([`Members`]): the
/// configuration as a `config` trace event's ([`ConfigKeys`]), the tasks
/// and messages as their texts.
struct RawScenario<'a> {
    config: ConfigKeys<'a>,
    now: String,
    cur_iter: Option<u64>,
    readings: Readings,
    /// Each task's text, read (as a [`SlimTask`]) when it is counted.
    tasks: Vec<&'a RawValue>,
    /// Each message as its text, parsed one at a time: a whole context of
    /// `Value`s takes tens of times the line's size.
    context: Vec<&'a RawValue>,
}

impl<'a> RawScenario<'a> {
    /// Reads line `number` of the input; unknown keys are ignored.
    fn read(line: &'a str, number: usize) -> Result<RawScenario<'a>, String> {
        let members = Members::read(line, "a scenario object")
            .map_err(|e| format!("invalid scenario: {}", e.message(number)))?;
        let mut config = ConfigKeys::default();
        let (mut now, mut cur_iter, mut readings) = (None, None, Readings::default());
        let (mut tasks, mut context) = (Vec::new(), Vec::new());
        for &(ref key, raw) in members.unique("")? {
            let list = |what: &str| {
                serde_json::from_str::<Vec<&RawValue>>(raw.get()).map_err(|_| {
                    format!("{key}: expected a list of {what}, got {}", short_text(raw))
                })
            };
            match key.as_str() {
                "now" => {
                    let text = serde_json::from_str(raw.get()).map_err(|_| {
                        format!(
                            "now: expected an RFC 3339 time with offset, got {}",
                            short_text(raw)
                        )
                    })?;
                    now = Some(text);
                }
                "cur_iter" => cur_iter = optional(raw, |r| unsigned(r, "cur_iter"))?,
                "readings" => {
                    let value: Value = serde_json::from_str(raw.get())
                        .map_err(|e| format!("readings: {}", json_error(&e, number)))?;
                    readings = Readings::from_json(&value, "readings")?;
                }
                "tasks" => tasks = list("tasks")?,
                "context" => context = list("messages")?,
                _ => {
                    config.take(key, raw, "")?;
                }
            }
        }
        let now =
            now.ok_or("now: missing: a scenario's instant is required (RFC 3339 with offset)")?;
        Ok(RawScenario { config, now, cur_iter, readings, tasks, context })
    }
}

/// A JSON object's members, in order, each value as its own text: read
/// once, then each key by its type ([`integer`], [`unsigned`], [`string`],
/// [`ConfigKeys`]), so that a wrong-typed value is an error naming its path
/// rather than serde's `expected i64 at line 1 column 68`. A value is
/// never parsed into a `Value` here: nesting is left to the reader of each
/// key (a configuration's is the core loader's, 1,024 levels).
#[derive(Debug)]
pub struct Members<'a>(Vec<(String, &'a RawValue)>);

/// Why a text is not an object of members.
#[derive(Debug)]
pub enum MembersError {
    /// Not JSON.
    Json(serde_json::Error),
    /// JSON, but not an object: what it should be, and the text.
    NotAnObject(&'static str, String),
}

impl MembersError {
    /// The message; a JSON error names line `number` of the input.
    pub fn message(&self, number: usize) -> String {
        match self {
            MembersError::Json(e) => json_error(e, number),
            MembersError::NotAnObject(what, got) => format!("expected {what}, got {got}"),
        }
    }
}

impl<'a> Members<'a> {
    /// The members of `text`, which must be `what` (a JSON object).
    pub fn read(text: &'a str, what: &'static str) -> Result<Members<'a>, MembersError> {
        let value: &RawValue = serde_json::from_str(text).map_err(MembersError::Json)?;
        if !value.get().starts_with('{') {
            return Err(MembersError::NotAnObject(what, short_text(value)));
        }
        serde_json::from_str::<Members<'a>>(value.get()).map_err(MembersError::Json)
    }

    /// The members, each key once: a repeated key is an error naming its
    /// path (`at` is the object's: `""` at the top, `"config."`).
    pub fn unique(&self, at: &str) -> Result<&[(String, &'a RawValue)], String> {
        for (i, (key, _)) in self.0.iter().enumerate() {
            if self.0[..i].iter().any(|(k, _)| k == key) {
                return Err(format!("{at}{key}: given twice"));
            }
        }
        Ok(&self.0)
    }

    /// The members, a repeated key's last value at its first place (as a
    /// `serde_json::Map` keeps them).
    pub fn last_wins(self) -> Vec<(String, &'a RawValue)> {
        let mut kept: Vec<(String, &'a RawValue)> = Vec::with_capacity(self.0.len());
        for (key, raw) in self.0 {
            match kept.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = raw,
                None => kept.push((key, raw)),
            }
        }
        kept
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Members<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members<'a>, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    members.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A value's text for an error message, cut to 40 characters.
pub fn short_text(raw: &RawValue) -> String {
    let text = raw.get();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// `None` for a `null` (an optional key given as `null` is absent, as
/// serde reads an `Option`), else `read` of the value.
pub fn optional<'a, T>(
    raw: &'a RawValue,
    read: impl FnOnce(&'a RawValue) -> Result<T, String>,
) -> Result<Option<T>, String> {
    if raw.get() == "null" {
        Ok(None)
    } else {
        read(raw).map(Some)
    }
}

/// An integer key's value (the core's `i64`); `at` is its path.
pub fn integer(raw: &RawValue, at: &str) -> Result<i64, String> {
    serde_json::from_str(raw.get()).map_err(|_| {
        format!("{at}: expected an integer in {}..={}, got {}", i64::MIN, i64::MAX, short_text(raw))
    })
}

/// A count's value (`u64`); `at` is its path.
pub fn unsigned(raw: &RawValue, at: &str) -> Result<u64, String> {
    serde_json::from_str(raw.get()).map_err(|_| {
        format!("{at}: expected an integer in 0..={}, got {}", u64::MAX, short_text(raw))
    })
}

/// A string key's value; `at` is its path.
pub fn string(raw: &RawValue, at: &str) -> Result<String, String> {
    serde_json::from_str(raw.get())
        .map_err(|_| format!("{at}: expected a string, got {}", short_text(raw)))
}

/// The configuration keys a scenario and a trace's `config` event (and
/// `replay --config`) share, read by this one loader: each typed key by its
/// type, the two configurations as their texts for the core's loader
/// ([`load_config`]). A `null` is an absent key.
#[derive(Debug, Default)]
pub struct ConfigKeys<'a> {
    /// `agent_name`.
    pub agent_name: Option<String>,
    /// `injection_config`'s text.
    pub injection_config: Option<&'a RawValue>,
    /// `context_config`'s text.
    pub context_config: Option<&'a RawValue>,
    /// `context_size`.
    pub context_size: Option<i64>,
    /// `input_tokens`.
    pub input_tokens: Option<i64>,
}

impl<'a> ConfigKeys<'a> {
    /// The keys [`take`](Self::take) reads.
    pub const KEYS: &'static str =
        "agent_name, injection_config, context_config, context_size or input_tokens";

    /// Reads member `key` if it is a configuration key; whether it was.
    /// `at` is the object's path (`""`, `"config."`).
    pub fn take(&mut self, key: &str, raw: &'a RawValue, at: &str) -> Result<bool, String> {
        let path = format!("{at}{key}");
        match key {
            "agent_name" => self.agent_name = optional(raw, |r| string(r, &path))?,
            "injection_config" => self.injection_config = optional(raw, Ok)?,
            "context_config" => self.context_config = optional(raw, Ok)?,
            "context_size" => self.context_size = optional(raw, |r| integer(r, &path))?,
            "input_tokens" => self.input_tokens = optional(raw, |r| integer(r, &path))?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// A task, read small: `serde_json::Value` takes about 25 times a task's
/// text (`{"state":"pending"}` is an ordered map and two strings), so a
/// 100 MB `tasks` line held as `Value`s took 2.6 GB. What the rules read of
/// a task is its JSON type and its `state`: an object keeps only its last
/// `state` member, shallowly (a string or scalar as it is, an array or
/// object as an empty one); any other task is kept shallowly too. Tasks are
/// read one at a time as they are counted.
struct SlimTask(Value);

/// A value with its type and scalars kept, and an array's or object's
/// members skipped unread.
struct Shallow(Value);

impl<'de> Deserialize<'de> for Shallow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SlimVisitor { keep_state: false }).map(Shallow)
    }
}

impl<'de> Deserialize<'de> for SlimTask {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SlimVisitor { keep_state: true }).map(SlimTask)
    }
}

/// Reads a value shallowly; with `keep_state`, an object's `state` member
/// is kept (shallowly) too.
struct SlimVisitor {
    keep_state: bool,
}

impl<'de> serde::de::Visitor<'de> for SlimVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Value::Array(Vec::new()))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = serde_json::Map::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if self.keep_state && key == "state" {
                kept.insert("state".into(), map.next_value::<Shallow>()?.0);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(Value::Object(kept))
    }
}

/// Live readings (envaware's own `readings` key and `read` trace event):
/// each field's rendered text, or `None` when unavailable, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings(pub Vec<(String, Option<String>)>);

impl Readings {
    /// Reads an object of field name to text or `null`, order kept; `at`
    /// names it in errors.
    pub fn from_json(value: &Value, at: &str) -> Result<Readings, String> {
        let Value::Object(map) = value else {
            return Err(format!("{at}: expected an object of field name to text or null"));
        };
        let read = |(k, v): (&String, &Value)| match v {
            Value::String(text) => Ok((k.clone(), Some(text.clone()))),
            Value::Null => Ok((k.clone(), None)),
            _ => Err(format!("{at}.{k}: expected a text or null")),
        };
        map.iter().map(read).collect::<Result<_, _>>().map(Readings)
    }

    /// Sets each field of `update`: in place when it has a reading, else
    /// appended. A field keeps its reading until set again.
    pub fn set(&mut self, update: Readings) {
        for (key, value) in update.0 {
            match self.0.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => self.0.push((key, value)),
            }
        }
    }

    /// Field `key`'s reading, as rendered (`unavailable` when it has none).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_deref().unwrap_or(UNAVAILABLE))
    }
}

impl LiveFields for Readings {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        self.0.get(i).map(|(k, v)| (k.as_str(), v.as_deref().unwrap_or(UNAVAILABLE)))
    }
}

impl<'de> Deserialize<'de> for Readings {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Readings::from_json(&Value::deserialize(d)?, "readings").map_err(serde::de::Error::custom)
    }
}

impl Serialize for Readings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// A block the sim owns; hint text parts are joined, as the rules read them.
// The variants' fields are the block's AgentScope keys, as in `MBlock`.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedBlock {
    /// A hint block; `created_at` as the time rules read it (`None`:
    /// missing or unreadable).
    Hint { source: Option<String>, text: String, created_at: Option<CreatedAt> },
    /// A tool call block.
    ToolCall { id: String, name: String, input: String },
    /// A tool result block.
    ToolResult { id: String, name: String, state: ToolResultState },
    /// Anything else.
    Other,
}

/// A message the sim owns.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedMessage {
    /// Sender role.
    pub role: Role,
    /// Sender name.
    pub name: String,
    /// Content blocks.
    pub blocks: Vec<OwnedBlock>,
}

impl Message for OwnedMessage {
    fn role(&self) -> Role {
        self.role
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn block_count(&self) -> usize {
        self.blocks.len()
    }
    fn block(&self, index: usize) -> Option<Block<'_>> {
        Some(match self.blocks.get(index)? {
            OwnedBlock::Hint { source, text, created_at } => Block::Hint {
                source: source.as_deref(),
                text: HintText::Single(text),
                created_at: *created_at,
            },
            OwnedBlock::ToolCall { id, name, input } => Block::ToolCall { id, name, input },
            OwnedBlock::ToolResult { id, name, state } => {
                Block::ToolResult { id, name, state: *state, output: "" }
            }
            OwnedBlock::Other => Block::Other,
        })
    }
}

/// A context held in a `Vec`, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VecConversation(pub Vec<OwnedMessage>);

impl Conversation for VecConversation {
    type Message<'m> = &'m OwnedMessage;
    fn message_count(&self) -> usize {
        self.0.len()
    }
    fn newest(&self, index: usize) -> Option<&OwnedMessage> {
        self.0.len().checked_sub(index + 1).and_then(|i| self.0.get(i))
    }
}

/// The result of one scenario, as printed on its line.
#[derive(Debug, Clone, PartialEq)]
pub enum Evaluation {
    /// The hint (or none), the event flag, and warnings.
    Hint {
        /// The hint's text, or none.
        hint: Option<String>,
        /// Whether a `HintBlockEvent` is emitted.
        event: bool,
        /// The warnings' messages.
        warnings: Vec<String>,
        /// With a watch configured: the watched fields whose watch fired,
        /// in configuration order; `None` with no watch.
        watch: Option<Vec<String>>,
    },
    /// The scenario or its configuration is invalid.
    Error(String),
}

impl Evaluation {
    /// The result line, as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            Evaluation::Hint { hint, event, warnings, watch } => {
                let mut obj = serde_json::Map::new();
                obj.insert("hint".into(), hint.clone().map_or(Value::Null, Value::String));
                obj.insert("event".into(), Value::Bool(*event));
                if let Some(fired) = watch {
                    obj.insert("watch".into(), fired.iter().cloned().map(Value::String).collect());
                }
                if !warnings.is_empty() {
                    obj.insert(
                        "warnings".into(),
                        warnings.iter().cloned().map(Value::String).collect(),
                    );
                }
                Value::Object(obj)
            }
            Evaluation::Error(e) => serde_json::json!({ "error": e }),
        }
    }
}

fn str_field<'v>(obj: &'v Value, key: &str, at: &str) -> Result<&'v str, String> {
    obj.get(key).and_then(Value::as_str).ok_or_else(|| format!("{at}.{key}: expected a string"))
}

fn parse_block(block: &Value, at: &str) -> Result<OwnedBlock, String> {
    let kind = str_field(block, "type", at)?;
    Ok(match kind {
        "hint" => {
            let text = match block.get("hint") {
                Some(Value::String(s)) => s.clone(),
                // A list hint: its text blocks joined with "", data blocks skipped.
                Some(Value::Array(items)) => {
                    let mut joined = String::new();
                    for (i, item) in items.iter().enumerate() {
                        if item.get("type").and_then(Value::as_str) == Some("text") {
                            joined.push_str(str_field(item, "text", &format!("{at}.hint[{i}]"))?);
                        }
                    }
                    joined
                }
                _ => return Err(format!("{at}.hint: expected a string or a list of blocks")),
            };
            let source = match block.get("source") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(format!("{at}.source: expected a string or null")),
            };
            // Missing, not a string, or unreadable: an unknown instant, whose
            // telling has an unknown age (the format's "Time rules").
            let created_at =
                block.get("created_at").and_then(Value::as_str).and_then(CreatedAt::parse);
            OwnedBlock::Hint { source, text, created_at }
        }
        "tool_call" => OwnedBlock::ToolCall {
            id: str_field(block, "id", at)?.into(),
            name: str_field(block, "name", at)?.into(),
            input: str_field(block, "input", at)?.into(),
        },
        "tool_result" => {
            let state = match block.get("state") {
                None => ToolResultState::Running,
                Some(s) => s.as_str().and_then(ToolResultState::from_name).ok_or_else(|| {
                    format!("{at}.state: expected success, error, interrupted, denied or running")
                })?,
            };
            OwnedBlock::ToolResult {
                id: str_field(block, "id", at)?.into(),
                name: str_field(block, "name", at)?.into(),
                state,
            }
        }
        _ => OwnedBlock::Other,
    })
}

/// Converts AgentScope `Msg` JSON into messages, with the reference's
/// role checks (a user message holds only text and data blocks, a system
/// message only text).
pub fn parse_context(context: &[Value]) -> Result<VecConversation, String> {
    let mut messages = Vec::with_capacity(context.len());
    for (i, msg) in context.iter().enumerate() {
        messages.push(parse_message(msg, &format!("context[{i}]"))?);
    }
    Ok(VecConversation(messages))
}

/// [`parse_context`] over each message's text, read one at a time and
/// small (a [`SlimMessage`]), each block read as it is converted: only one
/// block is ever held as a `Value`.
fn parse_raw_context(context: &[&RawValue], number: usize) -> Result<VecConversation, String> {
    let mut messages = Vec::with_capacity(context.len());
    for (i, raw) in context.iter().enumerate() {
        let at = format!("context[{i}]");
        let json = |e: serde_json::Error| format!("{at}: {}", json_error(&e, number));
        let msg: SlimMessage = serde_json::from_str(raw.get()).map_err(json)?;
        let blocks = msg
            .blocks
            .as_ref()
            .map(|b| b.iter().map(|r| serde_json::from_str(r.get()).map(Cow::Owned).map_err(json)));
        messages.push(message_with_blocks(&msg.head, blocks, &at)?);
    }
    Ok(VecConversation(messages))
}

/// A message, read small: `role` and `name` kept shallowly (see
/// [`SlimTask`]), a `content` list as its blocks' texts, any other
/// `content` shallowly, other members skipped. A message that is no
/// object is kept shallowly.
struct SlimMessage<'a> {
    head: Value,
    blocks: Option<Vec<&'a RawValue>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for SlimMessage<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SlimMessageVisitor(std::marker::PhantomData))
    }
}

struct SlimMessageVisitor<'a>(std::marker::PhantomData<&'a ()>);

/// A `content` value: a list as its items' texts, else shallowly.
enum Content<'a> {
    List(Vec<&'a RawValue>),
    Other(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content<'a>, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<&'de RawValue>()? {
                    items.push(item);
                }
                Ok(Content::List(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Content<'a>, A::Error> {
                SlimVisitor { keep_state: false }.visit_map(map).map(Content::Other)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Content<'a>, E> {
                Ok(Content::Other(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Content<'a>, E> {
                Ok(Content::Other(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Content<'a>, E> {
                Ok(Content::Other(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Content<'a>, E> {
                Ok(Content::Other(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Content<'a>, E> {
                Ok(Content::Other(v.into()))
            }
            fn visit_unit<E>(self) -> Result<Content<'a>, E> {
                Ok(Content::Other(Value::Null))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> serde::de::Visitor<'de> for SlimMessageVisitor<'a> {
    type Value = SlimMessage<'a>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<SlimMessage<'a>, A::Error> {
        let mut head = serde_json::Map::new();
        let mut blocks = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match &*key {
                "role" | "name" => {
                    head.insert(key.into_owned(), map.next_value::<Shallow>()?.0);
                }
                // The last `content` wins, as in a `Value`.
                "content" => match map.next_value::<Content<'a>>()? {
                    Content::List(items) => {
                        head.shift_remove("content");
                        blocks = Some(items);
                    }
                    Content::Other(v) => {
                        head.insert("content".into(), v);
                        blocks = None;
                    }
                },
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(SlimMessage { head: Value::Object(head), blocks })
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<SlimMessage<'a>, A::Error> {
        SlimVisitor { keep_state: false }
            .visit_seq(seq)
            .map(|head| SlimMessage { head, blocks: None })
    }
    fn visit_bool<E>(self, v: bool) -> Result<SlimMessage<'a>, E> {
        Ok(SlimMessage { head: Value::Bool(v), blocks: None })
    }
    fn visit_i64<E>(self, v: i64) -> Result<SlimMessage<'a>, E> {
        Ok(SlimMessage { head: v.into(), blocks: None })
    }
    fn visit_u64<E>(self, v: u64) -> Result<SlimMessage<'a>, E> {
        Ok(SlimMessage { head: v.into(), blocks: None })
    }
    fn visit_f64<E>(self, v: f64) -> Result<SlimMessage<'a>, E> {
        Ok(SlimMessage { head: v.into(), blocks: None })
    }
    fn visit_str<E>(self, _: &str) -> Result<SlimMessage<'a>, E> {
        Ok(SlimMessage { head: Value::String(String::new()), blocks: None })
    }
    fn visit_unit<E>(self) -> Result<SlimMessage<'a>, E> {
        Ok(SlimMessage { head: Value::Null, blocks: None })
    }
}

/// One AgentScope `Msg`, as [`parse_context`] reads it; `at` names it in
/// errors.
pub fn parse_message(msg: &Value, at: &str) -> Result<OwnedMessage, String> {
    let items = match msg.get("content") {
        Some(Value::Array(items)) => Some(items.iter().map(|b| Ok(Cow::Borrowed(b)))),
        _ => None,
    };
    message_with_blocks(msg, items, at)
}

/// One message from its `role`, `name` and `content` (when not a list) in
/// `msg`, and its content list's blocks, if it has one.
fn message_with_blocks<'v>(
    msg: &Value,
    items: Option<impl Iterator<Item = Result<Cow<'v, Value>, String>>>,
    at: &str,
) -> Result<OwnedMessage, String> {
    let role_name = str_field(msg, "role", at)?;
    let role = Role::from_name(role_name)
        .ok_or_else(|| format!("{at}.role: expected user, assistant or system"))?;
    let name = str_field(msg, "name", at)?.to_string();
    let blocks = match (msg.get("content"), items) {
        (_, Some(items)) => {
            let mut blocks = Vec::with_capacity(items.size_hint().0);
            for (j, b) in items.enumerate() {
                let b = b?;
                let at = format!("{at}.content[{j}]");
                let kind = str_field(&b, "type", &at)?;
                let allowed: &[&str] = match role {
                    Role::User => &["text", "data"],
                    Role::System => &["text"],
                    Role::Assistant => &[],
                };
                if !allowed.is_empty() && !allowed.contains(&kind) {
                    return Err(format!(
                        "{at}: a {role_name} message may hold only {} blocks",
                        allowed.join(" and ")
                    ));
                }
                blocks.push(parse_block(&b, &at)?);
            }
            blocks
        }
        (Some(Value::String(_)), None) => vec![OwnedBlock::Other],
        _ => return Err(format!("{at}.content: expected a list of blocks")),
    };
    Ok(OwnedMessage { role, name, blocks })
}

/// Counts the plan's tasks as AgentScope's `Task` model reads them: each
/// must be an object (pydantic refuses anything else), and one without a
/// state is pending. `eval`, `replay` and a dump's `tasks_context.tasks`
/// all go through here.
pub fn count_tasks<T: std::borrow::Borrow<Value>>(
    tasks: impl IntoIterator<Item = T>,
) -> Result<TaskCounts, String> {
    let mut counts = TaskCounts::default();
    for (i, t) in tasks.into_iter().enumerate() {
        let t = t.borrow();
        if !t.is_object() {
            return Err(format!(
                "tasks[{i}]: expected a task object (AgentScope's Task), got {}",
                short_json(t)
            ));
        }
        match t.get("state").map(|s| s.as_str()) {
            None | Some(Some("pending")) => counts.pending += 1,
            Some(Some("in_progress")) => counts.in_progress += 1,
            Some(Some("completed")) => {}
            _ => {
                return Err(format!("tasks[{i}].state: expected pending, in_progress or completed"))
            }
        }
    }
    Ok(counts)
}

/// A value's JSON text for an error message, cut to 40 characters.
pub fn short_json(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// Parses an RFC 3339 instant to Unix microseconds (finer digits truncated).
pub fn parse_now(now: &str) -> Result<Timestamp, String> {
    chrono::DateTime::parse_from_rfc3339(now)
        .map(|t| Timestamp::from_unix_micros(t.timestamp_micros()))
        .map_err(|e| format!("now: expected an RFC 3339 time with offset ({e})"))
}

/// Loads both configurations from their JSON texts.
pub fn load_config(
    buf: &mut SimConfigBuf,
    injection: Option<&str>,
    context: Option<&str>,
) -> Result<(), String> {
    // The core's errors name their field (`injection_config.timezone: …`)
    // or none (`the configuration must be a JSON object`).
    let named = |key: &str, e: String| {
        if e.starts_with(&format!("{key}.")) {
            e
        } else {
            format!("{key}: {e}")
        }
    };
    if let Some(text) = injection {
        buf.load_injection(text).map_err(|e| named("injection_config", e.to_string()))?;
    }
    if let Some(text) = context {
        buf.load_context(text).map_err(|e| named("context_config", e.to_string()))?;
    }
    Ok(())
}

/// The engine the sim decides with: arguments compared at the host's
/// capacity, so every argument AgentScope answers (up to about 985 levels
/// of nesting) compares as it does.
pub fn engine(config: Config<'_>) -> Result<Engine<'_>, ConfigError> {
    Engine::new(config).map(Engine::with_argument_capacity::<HostCapacity>)
}

/// Evaluates one scenario line (line 1 of its input).
pub fn evaluate(line: &str) -> Evaluation {
    evaluate_line(line, 1)
}

/// Evaluates one scenario line, `number` of its input (JSON errors name it).
pub fn evaluate_line(line: &str, number: usize) -> Evaluation {
    match evaluate_inner(line, number) {
        Ok(e) => e,
        Err(e) => Evaluation::Error(e),
    }
}

/// A JSON error of input line `number` (serde reads each line alone, so
/// its own position always says line 1).
pub fn json_error(e: &serde_json::Error, number: usize) -> String {
    let text = e.to_string();
    let message =
        text.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).unwrap_or(&text);
    match e.line() {
        0 => format!("{message} (line {number})"),
        _ => format!("{message} at line {number} column {}", e.column()),
    }
}

fn evaluate_inner(line: &str, number: usize) -> Result<Evaluation, String> {
    let raw = RawScenario::read(line, number)?;
    let mut buf = SimConfigBuf::with_capacity();
    load_config(
        &mut buf,
        raw.config.injection_config.map(RawValue::get),
        raw.config.context_config.map(RawValue::get),
    )?;
    let engine = engine(buf.config()).map_err(|e| e.to_string())?;
    let conversation = parse_raw_context(&raw.context, number)?;
    let agent_name = raw.config.agent_name.as_deref().unwrap_or(envaware::DEFAULT_AGENT_NAME);
    let step = Step {
        agent_name,
        // Every task's text is valid JSON (the line parsed) and a
        // `SlimTask` reads any JSON, so the `null` is never taken.
        tasks: count_tasks(
            raw.tasks
                .iter()
                .map(|t| serde_json::from_str::<SlimTask>(t.get()).map_or(Value::Null, |t| t.0)),
        )?,
        cur_iter: raw.cur_iter.unwrap_or(0),
        input_tokens: raw.config.input_tokens.unwrap_or(0),
        context_size: raw.config.context_size.unwrap_or(envaware::DEFAULT_CONTEXT_SIZE),
    };
    let mut clock = FixedClock::at(parse_now(&raw.now)?);
    let mut readings = raw.readings;
    Ok(run_step(&engine, &conversation, &step, &mut clock, &mut readings))
}

/// The watched fields whose watch fired, in configuration order; `None`
/// when no watch is configured.
pub fn fired_watches(engine: &Engine<'_>, decision: &envaware::Decision) -> Option<Vec<String>> {
    let watches = engine.config().config().injection.watch;
    (!watches.is_empty()).then(|| {
        decision
            .watch
            .iter()
            .filter_map(|i| watches.get(i))
            .map(|(name, _)| name.to_string())
            .collect()
    })
}

/// Runs one step of the engine with a growing buffer (the host has room).
pub fn run_step(
    engine: &Engine<'_>,
    conversation: &VecConversation,
    step: &Step<'_>,
    clock: &mut FixedClock,
    readings: &mut Readings,
) -> Evaluation {
    let mut size = 4096;
    loop {
        let mut out = vec![0u8; size];
        match engine.step(conversation, step, clock, readings, &mut out) {
            Ok(outcome) => {
                return Evaluation::Hint {
                    hint: outcome.hint.map(str::to_string),
                    event: outcome.event,
                    warnings: outcome.warnings.iter().map(|w| w.to_string()).collect(),
                    watch: fired_watches(engine, &outcome.decision),
                }
            }
            Err(e) => size = e.needed.max(size * 2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AgentScope's pydantic `Task` refuses a task that is not an object;
    /// one without a state is pending.
    #[test]
    fn tasks_are_read_as_agentscopes_task_model_reads_them() {
        let now = "\"now\": \"2026-07-22T02:00:00Z\"";
        for (tasks, error) in [
            (
                "[\"completed\"]",
                "tasks[0]: expected a task object (AgentScope's Task), got \"completed\"",
            ),
            ("[{}, null]", "tasks[1]: expected a task object (AgentScope's Task), got null"),
            (
                "[{\"state\": \"done\"}]",
                "tasks[0].state: expected pending, in_progress or completed",
            ),
        ] {
            assert_eq!(
                evaluate(&format!("{{{now}, \"tasks\": {tasks}}}")),
                Evaluation::Error(error.into()),
                "{tasks}"
            );
        }
        let counts = count_tasks(
            serde_json::from_str::<Vec<Value>>(
                "[{}, {\"state\": \"in_progress\"}, {\"state\": \"completed\"}]",
            )
            .unwrap(),
        );
        assert_eq!(counts, Ok(TaskCounts { pending: 1, in_progress: 1 }));
        assert!(short_json(&Value::String("x".repeat(100))).ends_with("xxx..."));
    }
}
