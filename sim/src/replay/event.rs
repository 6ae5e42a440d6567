//! One trace line, read once into a typed [`Event`]: after [`Event::parse`]
//! a handler never re-checks a shape.

use envaware::{TaskCounts, Timestamp};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::parse_duration;
use crate::scenario::{self, VecConversation};

/// The value of a `config` event: every key present replaces the current
/// one; absent keys keep theirs.
#[derive(Default)]
pub(super) struct ConfigEvent {
    pub(super) agent_name: Option<String>,
    pub(super) injection_config: Option<Box<RawValue>>,
    pub(super) context_config: Option<Box<RawValue>>,
    pub(super) context_size: Option<i64>,
    pub(super) input_tokens: Option<i64>,
    /// The agent's system prompt (`replay --request`); `null` is `""`.
    pub(super) system_prompt: Option<String>,
}

impl ConfigEvent {
    /// Reads a `config` value from its own text with the loader `eval`
    /// reads a scenario's configuration with ([`scenario::ConfigKeys`]);
    /// the configurations are kept as written (the core reads their
    /// numbers, and `--emit-scenarios` writes them unchanged). `at` is the
    /// value's path in errors (`"config."`, or `""` for `--config`).
    pub(super) fn parse(raw: &str, at: &str) -> Result<Self, String> {
        let what = "a `config` event's value (an object)";
        let members =
            scenario::Members::read(raw, what).map_err(|e| match at.strip_suffix('.') {
                Some(path) => format!("{path}: {}", e.message(1)),
                None => e.message(1),
            })?;
        let mut keys = scenario::ConfigKeys::default();
        let mut system_prompt = None;
        for (key, value) in members.unique(at)? {
            if key == "system_prompt" {
                let path = format!("{at}{key}");
                let prompt: Option<String> =
                    scenario::optional(value, |r| scenario::string(r, &path))?;
                system_prompt = Some(prompt.unwrap_or_default());
            } else if !keys.take(key, value, at)? {
                return Err(format!(
                    "{at}{key}: unknown key (expected {} or system_prompt)",
                    scenario::ConfigKeys::KEYS
                ));
            }
        }
        Ok(ConfigEvent {
            agent_name: keys.agent_name,
            injection_config: keys.injection_config.map(ToOwned::to_owned),
            context_config: keys.context_config.map(ToOwned::to_owned),
            context_size: keys.context_size,
            input_tokens: keys.input_tokens,
            system_prompt,
        })
    }
}

/// The value of a `step` event.
#[derive(Default)]
pub(super) struct StepEvent {
    pub(super) cur_iter: Option<u64>,
    pub(super) tokens: Option<i64>,
    /// The hint a device appended at this step (its session log,
    /// `envaware::journal`): a text, or `null` for none. `None` only when
    /// the key is absent: `"hint": null` records that nothing was appended.
    pub(super) hint: Option<Option<String>>,
    /// The instant the device's hint was appended at (`at`, with a hint):
    /// its `created_at`.
    pub(super) at: Option<Timestamp>,
    /// What the device decided at this step (a session log's step, format
    /// 3, `decided`): the dimensions that fired, as
    /// [`crate::device_log::decided`] writes them, or `null` for none.
    /// `None` when the key is absent (a plain trace).
    pub(super) decided: Option<Value>,
    /// The live values the device's hint told, in order (`told`, with a
    /// hint): what its hint is rendered with.
    pub(super) told: Option<scenario::Readings>,
}

impl StepEvent {
    /// Reads a `step` value (an object) from its own text.
    fn parse(raw: &RawValue) -> Result<Self, String> {
        let members = scenario::Members::read(raw.get(), "an object or null")
            .map_err(|e| format!("step: {}", e.message(1)))?;
        let mut step = StepEvent::default();
        for (key, value) in members.unique("step.")? {
            match key.as_str() {
                "cur_iter" => {
                    step.cur_iter =
                        scenario::optional(value, |r| scenario::unsigned(r, "step.cur_iter"))?
                }
                "tokens" => {
                    step.tokens =
                        scenario::optional(value, |r| scenario::integer(r, "step.tokens"))?
                }
                "hint" => {
                    let hint = scenario::optional(value, |r| scenario::string(r, "step.hint"));
                    step.hint = Some(hint.map_err(|_| {
                        let got = scenario::short_text(value);
                        format!("step.hint: expected a string, or null for none, got {got}")
                    })?);
                }
                "at" => {
                    let at = scenario::optional(value, |r| scenario::string(r, "step.at"))
                        .ok()
                        .flatten();
                    step.at = Some(match at.as_deref().and_then(envaware::CreatedAt::parse) {
                        Some(envaware::CreatedAt::Instant(at)) => at,
                        _ => {
                            let got = scenario::short_text(value);
                            return Err(format!(
                                "step.at: expected an RFC 3339 time with offset, got {got}"
                            ));
                        }
                    });
                }
                "decided" => {
                    let value: Value = serde_json::from_str(value.get())
                        .map_err(|e| format!("step.decided: {e}"))?;
                    if !(value.is_null() || value.is_object()) {
                        let got = scenario::short_json(&value);
                        return Err(format!("step.decided: expected an object or null, got {got}"));
                    }
                    step.decided = Some(value);
                }
                "told" => {
                    let value: Value = serde_json::from_str(value.get())
                        .map_err(|e| format!("step.told: {e}"))?;
                    let pair = |v: &Value| match v.as_array().map(Vec::as_slice) {
                        Some([Value::String(k), Value::String(v)]) => Some((k.clone(), Some(v.clone()))),
                        _ => None,
                    };
                    let pairs = value.as_array().and_then(|a| a.iter().map(pair).collect());
                    let Some(pairs) = pairs else {
                        let got = scenario::short_json(&value);
                        return Err(format!(
                            "step.told: expected a list of [field, value] texts, got {got}"
                        ));
                    };
                    step.told = Some(scenario::Readings(pairs));
                }
                _ => {
                    return Err(format!(
                        "step.{key}: unknown key (expected cur_iter, tokens, hint, at, decided or told)"
                    ))
                }
            }
        }
        Ok(step)
    }
}

/// A device log's header: what its log was written for (checked against
/// the configuration replayed with), and the agent's name.
pub(super) struct LogHeader {
    /// The log format's version.
    pub(super) version: u64,
    /// The hash of what the log was written for (`envaware::journal::Header`).
    pub(super) config: u64,
    /// The device's context capacities (messages, blocks, text bytes),
    /// which the hash covers.
    pub(super) capacity: [u64; 3],
    pub(super) agent: Option<String>,
    /// The configuration the log was written under (`settings`, the
    /// session configuration file's keys), as written.
    pub(super) settings: Option<String>,
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
        let capacity = header
            .get("capacity")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
            .and_then(|c| <[u64; 3]>::try_from(c).ok())
            .filter(|_| version == u64::from(envaware::journal::VERSION));
        let capacity = match capacity {
            Some(capacity) => capacity,
            // Another version is refused as such (`check_header`).
            None if version != u64::from(envaware::journal::VERSION) => [0; 3],
            None => {
                return Err(format!(
                    "log.capacity: expected three capacities (messages, blocks, text bytes), \
                     got {}",
                    got("capacity")
                ))
            }
        };
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
        let settings = match header.get("settings") {
            None | Some(Value::Null) => None,
            Some(settings @ Value::Object(_)) => Some(settings.to_string()),
            Some(other) => {
                return Err(format!(
                    "log.settings: expected the configuration object, got {}",
                    scenario::short_json(other)
                ))
            }
        };
        Ok(LogHeader { version, config, capacity, agent, settings })
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
    /// The compressed summary (`None`: cleared), sent after the system prompt.
    Summary(Option<String>),
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
    /// The event named `key` with the value `raw`. `config`, `step` and
    /// `tokens` read their keys by type from the value's own text (`config`
    /// with `eval`'s loader, keeping its text); the others read it as a
    /// `Value`.
    pub(super) fn parse(key: &str, raw: &RawValue) -> Result<Event, String> {
        let object = raw.get().starts_with('{');
        Ok(match key {
            "config" if object => Event::Config(ConfigEvent::parse(raw.get(), "config.")?),
            "config" => {
                return Err(format!(
                    "config: expected an object, got {}",
                    scenario::short_text(raw)
                ))
            }
            "step" if raw.get() == "null" => Event::Step(StepEvent::default()),
            "step" if object => Event::Step(StepEvent::parse(raw)?),
            "step" => {
                return Err(format!(
                    "step: expected an object or null, got {}",
                    scenario::short_text(raw)
                ))
            }
            "tokens" => Event::Tokens(scenario::integer(raw, "tokens")?),
            _ => {
                // The line parsed: only nesting past serde's 128 levels fails here.
                let value: Value = serde_json::from_str(raw.get())
                    .map_err(|e| format!("{key}: {}", scenario::json_error(&e, 1)))?;
                Event::parse_value(key, value)?
            }
        })
    }

    /// An event read as a `Value`.
    fn parse_value(key: &str, value: Value) -> Result<Event, String> {
        Ok(match key {
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
            "compress" => Event::Compress(match value {
                Value::String(s) if s == "all" => 0,
                Value::Number(n) => n.as_u64().ok_or("compress: expected a count of messages to keep")? as usize,
                _ => return Err("compress: expected the number of newest messages to keep, or \"all\"".into()),
            }),
            "log" => Event::Log(LogHeader::parse(&value)?),
            "summary" => Event::Summary(match value {
                Value::Null => None,
                Value::String(s) => Some(s),
                other => return Err(format!("summary: expected a text or null, got {}", scenario::short_json(&other))),
            }),
            "read" => Event::Read(scenario::Readings::from_json(&value, "read")?),
            "woken" => match value {
                Value::Object(m) if m.values().all(Value::is_string) => Event::Woken(m),
                other => return Err(format!("woken: expected an object of readings by field, got {}", scenario::short_json(&other))),
            },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::SimConfigBuf;
    use envaware::{Config, DEFAULT_AGENT_NAME, DEFAULT_CONTEXT_SIZE};

    /// What a configuration says, compared field by field: two buffers'
    /// arenas differ (the core keeps the agent's name in its own).
    fn summary(agent_name: &str, context_size: i64, config: Config<'_>) -> String {
        let i = config.injection;
        format!(
            "{agent_name} {context_size} {} {} {} {} {} {:?} {:?} {:?} {:?} {:?}",
            i.timezone,
            i.time_format,
            i.time_interval,
            i.template,
            i.tool_retries_limit,
            i.task_tool_names.iter().collect::<Vec<_>>(),
            i.extra_fields.iter().collect::<Vec<_>>(),
            i.watch.iter().collect::<Vec<_>>(),
            (i.inject_runtime_state, i.strict, i.context_buffer_ratio),
            config.context,
        )
    }

    /// `replay --config`'s reading of a file, from a new session.
    fn by_the_sim(doc: &str) -> Option<String> {
        let event = ConfigEvent::parse(doc, "").ok()?;
        let mut buf = Box::new(SimConfigBuf::with_capacity());
        let injection = event.injection_config.as_deref().map(RawValue::get);
        let context = event.context_config.as_deref().map(RawValue::get);
        scenario::load_config(&mut buf, injection, context).ok()?;
        let name = event.agent_name.as_deref().unwrap_or(DEFAULT_AGENT_NAME);
        Some(summary(name, event.context_size.unwrap_or(DEFAULT_CONTEXT_SIZE), buf.config()))
    }

    /// The core's `ConfigBuf::load_session`.
    fn by_the_core(doc: &str) -> Option<String> {
        let mut buf = Box::new(SimConfigBuf::with_capacity());
        let s = buf.load_session(doc).ok()?;
        Some(summary(s.agent_name, s.context_size, s.config))
    }

    /// The core's session loader and the sim read a configuration file
    /// alike: the same values, the same documents refused. The one
    /// difference is `input_tokens`, a step's value the sim's file may
    /// hold and the core's session refuses.
    #[test]
    fn the_core_s_session_loader_reads_a_config_file_as_the_sim_does() {
        for doc in [
            include_str!("../../../examples/sprout.config.json"),
            include_str!("../../../firmware/session-config.json"),
            "{}",
            r#"{"agent_name": null, "context_size": null, "injection_config": null}"#,
            r#"{"agent_name": "R\u00f6ver", "context_size": -1, "context_config": {"trigger_ratio": "0.5"}}"#,
            r#"{"injection_config": {"task_tool_names": ["A"], "unknown": [1]}, "context_size": 0}"#,
        ] {
            let sim = by_the_sim(doc);
            assert!(sim.is_some(), "{doc}");
            assert_eq!(by_the_core(doc), sim, "{doc}");
        }
        for bad in [
            "[]",
            "{",
            r#"{"agent_name": 5}"#,
            r#"{"agent_name": "\ud800"}"#,
            r#"{"context_size": "4096"}"#,
            r#"{"context_size": 1.0}"#,
            r#"{"context_size": 9223372036854775808}"#,
            r#"{"context_sise": 1}"#,
            r#"{"context_size": 1, "context_size": 1}"#,
            r#"{"injection_config": []}"#,
            r#"{"context_config": 5}"#,
            r#"{"injection_config": {"timezone": 5}}"#,
        ] {
            assert_eq!((by_the_sim(bad), by_the_core(bad)), (None, None), "{bad}");
        }
        let with_tokens = r#"{"agent_name": "a", "input_tokens": 5}"#;
        assert!(by_the_sim(with_tokens).is_some() && by_the_core(with_tokens).is_none());
    }
}
