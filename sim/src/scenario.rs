//! Scenarios (`../shared/scenario-format.md`, v1): one JSON object holding
//! everything the rules read at one reasoning step, evaluated by the core.

use envaware::args::HostCapacity;
use envaware::ConfigBuf;
use envaware::{Block, Conversation, HintText, Message, Role, ToolResultState};
use envaware::{Config, ConfigError, Engine, FixedClock, LiveFields, Step, TaskCounts, Timestamp, UNAVAILABLE};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The configuration buffer the sim uses: generous, since it runs on a host.
pub type SimConfigBuf = ConfigBuf<65536, 64, 64>;

#[derive(Deserialize)]
struct RawScenario<'a> {
    #[serde(default)]
    agent_name: Option<String>,
    now: String,
    #[serde(borrow, default)]
    injection_config: Option<&'a RawValue>,
    #[serde(borrow, default)]
    context_config: Option<&'a RawValue>,
    #[serde(default)]
    context_size: Option<i64>,
    #[serde(default)]
    input_tokens: Option<i64>,
    #[serde(default)]
    cur_iter: Option<u64>,
    #[serde(default)]
    tasks: Vec<Value>,
    #[serde(default)]
    readings: Readings,
    #[serde(default)]
    context: Vec<Value>,
}

/// Live readings (envaware's own `readings` key and `read` trace event):
/// each field's rendered text, or `None` when unavailable, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings(pub Vec<(String, Option<String>)>);

impl Readings {
    /// Reads an object of field name to text or `null`, order kept; `at`
    /// names it in errors.
    pub fn from_json(value: &Value, at: &str) -> Result<Readings, String> {
        let Value::Object(map) = value else { return Err(format!("{at}: expected an object of field name to text or null")) };
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
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_deref().unwrap_or(UNAVAILABLE))
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
    /// A hint block.
    Hint { source: Option<String>, text: String },
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
            OwnedBlock::Hint { source, text } => Block::Hint { source: source.as_deref(), text: HintText::Single(text) },
            OwnedBlock::ToolCall { id, name, input } => Block::ToolCall { id, name, input },
            OwnedBlock::ToolResult { id, name, state } => Block::ToolResult { id, name, state: *state },
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
                    obj.insert("warnings".into(), warnings.iter().cloned().map(Value::String).collect());
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
            OwnedBlock::Hint { source, text }
        }
        "tool_call" => OwnedBlock::ToolCall {
            id: str_field(block, "id", at)?.into(),
            name: str_field(block, "name", at)?.into(),
            input: str_field(block, "input", at)?.into(),
        },
        "tool_result" => {
            let state = match block.get("state") {
                None => ToolResultState::Running,
                Some(s) => s
                    .as_str()
                    .and_then(ToolResultState::from_name)
                    .ok_or_else(|| format!("{at}.state: expected success, error, interrupted, denied or running"))?,
            };
            OwnedBlock::ToolResult { id: str_field(block, "id", at)?.into(), name: str_field(block, "name", at)?.into(), state }
        }
        _ => OwnedBlock::Other,
    })
}

/// Converts AgentScope `Msg` JSON into messages, with the reference's
/// role checks (a user message holds only text and data blocks, a system
/// message only text).
pub fn parse_context(context: &[Value]) -> Result<VecConversation, String> {
    let messages = context.iter().enumerate().map(|(i, msg)| parse_message(msg, &format!("context[{i}]")));
    Ok(VecConversation(messages.collect::<Result<_, _>>()?))
}

/// One AgentScope `Msg`, as [`parse_context`] reads it; `at` names it in
/// errors.
pub fn parse_message(msg: &Value, at: &str) -> Result<OwnedMessage, String> {
    let role_name = str_field(msg, "role", at)?;
    let role = Role::from_name(role_name).ok_or_else(|| format!("{at}.role: expected user, assistant or system"))?;
    let name = str_field(msg, "name", at)?.to_string();
    let blocks = match msg.get("content") {
        Some(Value::String(_)) => vec![OwnedBlock::Other],
        Some(Value::Array(items)) => {
            let mut blocks = Vec::with_capacity(items.len());
            for (j, b) in items.iter().enumerate() {
                let at = format!("{at}.content[{j}]");
                let kind = str_field(b, "type", &at)?;
                let allowed: &[&str] = match role {
                    Role::User => &["text", "data"],
                    Role::System => &["text"],
                    Role::Assistant => &[],
                };
                if !allowed.is_empty() && !allowed.contains(&kind) {
                    return Err(format!("{at}: a {role_name} message may hold only {} blocks", allowed.join(" and ")));
                }
                blocks.push(parse_block(b, &at)?);
            }
            blocks
        }
        _ => return Err(format!("{at}.content: expected a list of blocks")),
    };
    Ok(OwnedMessage { role, name, blocks })
}

/// Counts the plan's tasks as AgentScope's `Task` model reads them: each
/// must be an object (pydantic refuses anything else), and one without a
/// state is pending. `eval`, `replay` and a dump's `tasks_context.tasks`
/// all go through here.
pub fn count_tasks(tasks: &[Value]) -> Result<TaskCounts, String> {
    let mut counts = TaskCounts::default();
    for (i, t) in tasks.iter().enumerate() {
        if !t.is_object() {
            return Err(format!("tasks[{i}]: expected a task object (AgentScope's Task), got {}", short_json(t)));
        }
        match t.get("state").map(|s| s.as_str()) {
            None | Some(Some("pending")) => counts.pending += 1,
            Some(Some("in_progress")) => counts.in_progress += 1,
            Some(Some("completed")) => {}
            _ => return Err(format!("tasks[{i}].state: expected pending, in_progress or completed")),
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
pub fn load_config(buf: &mut SimConfigBuf, injection: Option<&str>, context: Option<&str>) -> Result<(), String> {
    if let Some(text) = injection {
        buf.load_injection(text).map_err(|e| format!("injection_config: {e}"))?;
    }
    if let Some(text) = context {
        buf.load_context(text).map_err(|e| format!("context_config: {e}"))?;
    }
    Ok(())
}

/// The engine the sim decides with: arguments compared at the host's
/// capacity, so every argument AgentScope answers (up to about 985 levels
/// of nesting) compares as it does.
pub fn engine(config: Config<'_>) -> Result<Engine<'_>, ConfigError> {
    Engine::new(config).map(Engine::with_argument_capacity::<HostCapacity>)
}

/// Evaluates one scenario line.
pub fn evaluate(line: &str) -> Evaluation {
    match evaluate_inner(line) {
        Ok(e) => e,
        Err(e) => Evaluation::Error(e),
    }
}

fn evaluate_inner(line: &str) -> Result<Evaluation, String> {
    let raw: RawScenario = serde_json::from_str(line).map_err(|e| format!("invalid scenario: {e}"))?;
    let mut buf = SimConfigBuf::new();
    load_config(&mut buf, raw.injection_config.map(RawValue::get), raw.context_config.map(RawValue::get))?;
    let engine = engine(buf.config()).map_err(|e| e.to_string())?;
    let conversation = parse_context(&raw.context)?;
    let agent_name = raw.agent_name.as_deref().unwrap_or("agent");
    let step = Step {
        agent_name,
        tasks: count_tasks(&raw.tasks)?,
        cur_iter: raw.cur_iter.unwrap_or(0),
        input_tokens: raw.input_tokens.unwrap_or(0),
        context_size: raw.context_size.unwrap_or(128_000),
    };
    let mut clock = FixedClock::at(parse_now(&raw.now)?);
    let mut readings = raw.readings;
    Ok(run_step(&engine, &conversation, &step, &mut clock, &mut readings))
}

/// The watched fields whose watch fired, in configuration order; `None`
/// when no watch is configured.
pub fn fired_watches(engine: &Engine<'_>, decision: &envaware::Decision) -> Option<Vec<String>> {
    let watches = engine.config().config().injection.watch;
    (!watches.is_empty()).then(|| decision.watch.iter().filter_map(|i| watches.get(i)).map(|(name, _)| name.to_string()).collect())
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
            ("[\"completed\"]", "tasks[0]: expected a task object (AgentScope's Task), got \"completed\""),
            ("[{}, null]", "tasks[1]: expected a task object (AgentScope's Task), got null"),
            ("[{\"state\": \"done\"}]", "tasks[0].state: expected pending, in_progress or completed"),
        ] {
            assert_eq!(evaluate(&format!("{{{now}, \"tasks\": {tasks}}}")), Evaluation::Error(error.into()), "{tasks}");
        }
        let counts =
            count_tasks(&serde_json::from_str::<Vec<Value>>("[{}, {\"state\": \"in_progress\"}, {\"state\": \"completed\"}]").unwrap());
        assert_eq!(counts, Ok(TaskCounts { pending: 1, in_progress: 1 }));
        assert!(short_json(&Value::String("x".repeat(100))).ends_with("xxx..."));
    }
}
