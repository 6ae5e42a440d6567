//! One trace line, read once into a typed [`Event`]: after [`Event::parse`]
//! a handler never re-checks a shape.

use envaware::{TaskCounts, Timestamp};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::parse_duration;
use crate::scenario::{self, VecConversation};

/// The value of a `config` event: every key present replaces the current
/// one; absent keys keep theirs.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ConfigEvent {
    #[serde(default)]
    pub(super) agent_name: Option<String>,
    #[serde(default)]
    pub(super) injection_config: Option<Box<RawValue>>,
    #[serde(default)]
    pub(super) context_config: Option<Box<RawValue>>,
    #[serde(default)]
    pub(super) context_size: Option<i64>,
    #[serde(default)]
    pub(super) input_tokens: Option<i64>,
}

impl ConfigEvent {
    /// Reads a `config` value from its own text (the configurations are kept
    /// as written: the core reads their numbers, and `--emit-scenarios`
    /// writes them unchanged).
    pub(super) fn parse(raw: &str) -> Result<Self, String> {
        serde_json::from_str(raw).map_err(|e| format!("config: {e}"))
    }
}

/// The value of a `step` event.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct StepEvent {
    #[serde(default)]
    pub(super) cur_iter: Option<u64>,
    #[serde(default)]
    pub(super) tokens: Option<i64>,
    /// The hint a device appended at this step (its session log,
    /// `envaware::journal`): a text, or `null` for none. `None` only when
    /// the key is absent: `"hint": null` records that nothing was appended.
    #[serde(default, deserialize_with = "present")]
    pub(super) hint: Option<Value>,
}

/// A key that is present, `null` included (serde reads a `null` as an
/// absent `Option`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl StepEvent {
    /// The recorded hint: `None` when the step records none, `Some(None)`
    /// when it records that nothing was appended.
    pub(super) fn recorded(&self) -> Result<Option<Option<String>>, String> {
        match &self.hint {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(text)) => Ok(Some(Some(text.clone()))),
            Some(_) => Err("step: hint: expected a text or null".into()),
        }
    }
}

/// A device log's header: what its log was written for (checked against
/// the configuration replayed with), and the agent's name.
pub(super) struct LogHeader {
    /// The log format's version.
    pub(super) version: u64,
    /// The hash of what the log was written for (`envaware::journal::Header`).
    pub(super) config: u64,
    pub(super) agent: Option<String>,
}

impl LogHeader {
    fn parse(value: &Value) -> Result<LogHeader, String> {
        let Value::Object(header) = value else {
            return Err(format!(
                "log: expected the header object, got {}",
                scenario::short_json(value)
            ));
        };
        let got = |key: &str| header.get(key).map_or("nothing".into(), scenario::short_json);
        let version = header
            .get("version")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("log.version: expected an integer, got {}", got("version")))?;
        let config = header
            .get("config")
            .and_then(Value::as_str)
            .filter(|hex| hex.len() <= 16)
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .ok_or_else(|| {
                format!("log.config: expected a hash of 16 hex digits, got {}", got("config"))
            })?;
        let agent = match header.get("agent") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(other) => {
                return Err(format!(
                    "log.agent: expected a text, got {}",
                    scenario::short_json(other)
                ))
            }
        };
        Ok(LogHeader { version, config, agent })
    }
}

/// A `user` event: a text, or a message object to complete.
pub(super) enum UserEvent {
    Text(String),
    Message(Map<String, Value>),
}

/// One event of a trace ("Replay traces" in docs/sim.md).
pub(super) enum Event {
    Config(ConfigEvent),
    /// `None`: the clock is unset.
    SetClock(Option<Timestamp>),
    /// Microseconds, possibly negative.
    Advance(i64),
    User(UserEvent),
    Message(Value),
    Reply,
    Assistant(Vec<Value>),
    ToolCall(Map<String, Value>),
    /// The result's object; a bare state is already `{"state": …}`.
    ToolResult(Map<String, Value>),
    /// The messages as written, and as [`scenario::parse_context`] read them.
    Context(Vec<Value>, VecConversation),
    /// The tasks as `Task` objects, and their counts.
    Tasks(Vec<Value>, TaskCounts),
    Tokens(i64),
    /// The number of newest messages to keep.
    Compress(usize),
    Step(StepEvent),
    /// A device log's header (`envaware::journal`): the log's items from
    /// here on say every input a step needs.
    Log(LogHeader),
    /// Live readings for the following steps (envaware's own).
    Read(scenario::Readings),
    /// The environment woke the agent for the next step (a device's
    /// stream): the readings that would fire its watches, by field.
    Woken(Map<String, Value>),
}

impl Event {
    /// The event named `key` with the value `value`. `raw` gives the value's
    /// own text, read only for the two events that need it: `config` keeps
    /// its text, and `step`'s errors name a column of it.
    pub(super) fn parse(
        key: &str,
        value: Value,
        raw: impl FnOnce() -> Result<Box<RawValue>, String>,
    ) -> Result<Event, String> {
        Ok(match key {
            // serde would read a struct from a list too: only an object is a configuration.
            "config" if value.is_object() => Event::Config(ConfigEvent::parse(raw()?.get())?),
            "config" => return Err(format!("config: expected an object, got {}", scenario::short_json(&value))),
            "set_clock" => Event::SetClock(match value {
                Value::Null => None,
                Value::String(s) => Some(scenario::parse_now(&s).map_err(|e| e.replacen("now", "set_clock", 1))?),
                _ => return Err("set_clock: expected an RFC 3339 time with offset, or null".into()),
            }),
            "advance" => Event::Advance(parse_duration(&value)?),
            "user" => Event::User(match value {
                Value::String(text) => UserEvent::Text(text),
                Value::Object(m) => UserEvent::Message(m),
                _ => return Err("user: expected a text or a message object".into()),
            }),
            "message" => Event::Message(value),
            "reply" => match value {
                Value::Null => Event::Reply,
                Value::Object(m) if m.is_empty() => Event::Reply,
                other => return Err(format!("reply: expected {{}} (a reply has no value), got {}", scenario::short_json(&other))),
            },
            "assistant" => Event::Assistant(match value {
                Value::String(text) => vec![json!({"type": "text", "text": text})],
                Value::Array(blocks) => blocks,
                _ => return Err("assistant: expected a text or a list of blocks".into()),
            }),
            "tool_call" => match value {
                Value::Object(call) => Event::ToolCall(call),
                _ => return Err("tool_call: expected an object with name and input".into()),
            },
            "tool_result" => Event::ToolResult(match value {
                Value::Object(m) => m,
                // The state alone, of the newest call.
                Value::String(state) => Map::from_iter([("state".to_string(), Value::String(state))]),
                _ => return Err("tool_result: expected an object or a state".into()),
            }),
            "context" => {
                let Value::Array(msgs) = value else {
                    return Err("context: expected a list of messages".into());
                };
                let parsed = scenario::parse_context(&msgs)?;
                Event::Context(msgs, parsed)
            }
            "tasks" => {
                let (tasks, counts) = parse_tasks(value)?;
                Event::Tasks(tasks, counts)
            }
            "tokens" => Event::Tokens(value.as_i64().ok_or("tokens: expected an integer")?),
            "compress" => Event::Compress(match value {
                Value::String(s) if s == "all" => 0,
                Value::Number(n) => n.as_u64().ok_or("compress: expected a count of messages to keep")? as usize,
                _ => return Err("compress: expected the number of newest messages to keep, or \"all\"".into()),
            }),
            "log" => Event::Log(LogHeader::parse(&value)?),
            "read" => Event::Read(scenario::Readings::from_json(&value, "read")?),
            "woken" => match value {
                Value::Object(m) if m.values().all(Value::is_string) => Event::Woken(m),
                other => return Err(format!("woken: expected an object of readings by field, got {}", scenario::short_json(&other))),
            },
            "step" => Event::Step(match value {
                Value::Null => StepEvent::default(),
                Value::Object(_) => serde_json::from_str(raw()?.get()).map_err(|e| format!("step: {e}"))?,
                other => return Err(format!("step: expected an object or null, got {}", scenario::short_json(&other))),
            }),
            other => {
                return Err(format!(
                    "unknown event {other:?} (expected config, set_clock, advance, user, assistant, tool_call, tool_result, message, \
                     reply, context, tasks, tokens, compress, read, woken, step or log)"
                ))
            }
        })
    }
}

/// A `tasks` event: a list of `Task` objects or of bare states (the
/// trace's shorthand for `{"state": …}`), read by [`scenario::count_tasks`]
/// as `eval` reads a scenario's tasks.
fn parse_tasks(value: Value) -> Result<(Vec<Value>, TaskCounts), String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "tasks: expected a list of tasks or states, got {}",
            scenario::short_json(&value)
        ));
    };
    let tasks: Vec<Value> = items
        .into_iter()
        .map(|t| match t {
            Value::String(state) => json!({ "state": state }),
            other => other,
        })
        .collect();
    let counts = scenario::count_tasks(&tasks)?;
    Ok((tasks, counts))
}
