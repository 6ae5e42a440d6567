//! Writing items: the serializer of each event.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};

use super::*;
use crate::config::watch::WatchList;
use crate::config::{ExtraFields, StrList};
use crate::conversation::{Role, SliceMessage};
use crate::rules::TaskCounts;
use crate::wire::{Content, Rfc3339};

/// An item on its way out: `{"#": n, "<event>": value}`.
pub(crate) struct ItemOut<'e> {
    pub(crate) n: u32,
    pub(crate) event: &'e Event<'e>,
    pub(crate) said: &'e Said,
}

impl Serialize for ItemOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Item", 2)?;
        m.serialize_field("#", &self.n)?;
        m.serialize_field(self.event.key(self.said), &EventOut(self.event, self.said))?;
        m.end()
    }
}

/// An event's value, given what the log said before it.
pub(crate) struct EventOut<'e>(&'e Event<'e>, &'e Said);

impl Serialize for EventOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self.0 {
            Event::Log { header, live, agent, steps, settings } => {
                let mut m = s.serialize_struct("Log", 7)?;
                m.serialize_field("version", &header.version)?;
                m.serialize_field("config", &Hex(header.config))?;
                m.serialize_field("capacity", &header.capacity)?;
                m.serialize_field("live", &live)?;
                m.serialize_field("agent", agent)?;
                if steps > 0 {
                    m.serialize_field("steps", &steps)?;
                }
                if let Some(config) = settings {
                    let settings = SettingsOut(config, agent, self.1.config);
                    m.serialize_field("settings", &settings)?;
                }
                m.end()
            }
            Event::Config { agent_name, context_size } => {
                let mut m = s.serialize_struct("Config", 2)?;
                m.serialize_field("agent_name", agent_name)?;
                m.serialize_field("context_size", &context_size)?;
                m.end()
            }
            Event::SetClock(now) => match self.1.advance(now) {
                Some(micros) if micros % 1_000_000 == 0 => s.serialize_i64(micros / 1_000_000),
                Some(micros) => s.collect_str(&format_args!("{micros}us")),
                None => now.map(Rfc3339).serialize(s),
            },
            Event::Tasks(counts) => TasksOut(counts).serialize(s),
            Event::User { name } => {
                let mut m = s.serialize_struct("User", 2)?;
                m.serialize_field("name", name)?;
                m.serialize_field("content", "")?;
                m.end()
            }
            Event::Message { role, name, blocks } => {
                let mut m = s.serialize_struct("Msg", 3)?;
                m.serialize_field("name", name)?;
                m.serialize_field("role", role.name())?;
                m.serialize_field(
                    "content",
                    &Content { msg: &SliceMessage { role, name, blocks }, id: "m" },
                )?;
                m.end()
            }
            Event::Assistant(blocks) => {
                Content { msg: &SliceMessage { role: Role::Assistant, name: "", blocks }, id: "m" }
                    .serialize(s)
            }
            Event::ToolCall { id, name, input } => {
                let mut m = s.serialize_struct("ToolCall", 3)?;
                m.serialize_field("id", id)?;
                m.serialize_field("name", name)?;
                m.serialize_field("input", input)?;
                m.end()
            }
            Event::ToolResult { id, name, state } => {
                let mut m = s.serialize_struct("ToolResult", 3)?;
                m.serialize_field("id", id)?;
                m.serialize_field("name", name)?;
                m.serialize_field("state", state.name())?;
                m.end()
            }
            Event::Reply => s.serialize_none(),
            Event::Compress { keep } => s.serialize_u64(keep as u64),
            Event::Read(Readings { fields, .. }) => {
                let fields = fields.unwrap_or(&());
                let mut m = s.serialize_map(Some(fields.len()))?;
                for (name, value) in (0..fields.len()).filter_map(|i| fields.field(i)) {
                    m.serialize_entry(name, value)?;
                }
                m.end()
            }
            // What the replay would assume is left out.
            Event::Step { cur_iter, tokens, hint, at } => {
                let mut m = s.serialize_struct("Step", 4)?;
                if self.1.iter != Some(cur_iter) {
                    m.serialize_field("cur_iter", &cur_iter)?;
                }
                if self.1.tokens != Some(tokens) {
                    m.serialize_field("tokens", &tokens)?;
                }
                m.serialize_field("hint", &hint)?;
                if let (Some(_), Some(at)) = (hint, at) {
                    m.serialize_field("at", &Rfc3339(at))?;
                }
                m.end()
            }
        }
    }
}

/// A configuration hash as 16 hex digits.
pub(crate) struct Hex(u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:016x}", self.0))
    }
}

/// Task counts as the trace's list of states.
pub(crate) struct TasksOut(TaskCounts);

impl Serialize for TasksOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for (count, state) in [(self.0.pending, "pending"), (self.0.in_progress, "in_progress")] {
            for _ in 0..count {
                seq.serialize_element(state)?;
            }
        }
        seq.end()
    }
}

/// A configuration as the session configuration file writes it
/// (`{"agent_name": …, "injection_config": {…}, "context_config": {…}}`,
/// the fields that differ from the defaults): what `ConfigBuf::load_session` and
/// `envaware-sim replay` load. Floats are written shortest-exact (ryu),
/// watch bounds as decimal strings, so the loaded configuration hashes as
/// this one.
/// With the context size the last step had, when the log says it (a
/// compaction's header: the items kept before it may come after the
/// `config` item that said it, popped).
struct SettingsOut<'c>(&'c Config<'c>, &'c str, Option<i64>);

impl Serialize for SettingsOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Settings", 4)?;
        m.serialize_field("agent_name", self.1)?;
        m.serialize_field("injection_config", &InjectionOut(&self.0.injection))?;
        m.serialize_field("context_config", &ContextOut(&self.0.context))?;
        if let Some(context_size) = self.2 {
            m.serialize_field("context_size", &context_size)?;
        }
        m.end()
    }
}

struct InjectionOut<'c>(&'c InjectionConfig<'c>);

impl Serialize for InjectionOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Destructured: a new field does not compile until it is written.
        let InjectionConfig {
            inject_runtime_state,
            timezone,
            time_format,
            time_interval,
            context_buffer_ratio,
            tool_retries_limit,
            tool_retries_hint,
            template,
            injection_source,
            task_tool_names,
            extra_fields,
            emit_hint_event,
            strict,
            filtered_zone_falls_back_to_utc,
            watch,
        } = self.0;
        let d = InjectionConfig::default();
        let mut m = s.serialize_map(None)?;
        for (key, value, default) in [
            ("inject_runtime_state", inject_runtime_state, d.inject_runtime_state),
            ("emit_hint_event", emit_hint_event, d.emit_hint_event),
            ("strict", strict, d.strict),
            (
                "filtered_zone_falls_back_to_utc",
                filtered_zone_falls_back_to_utc,
                d.filtered_zone_falls_back_to_utc,
            ),
        ] {
            if *value != default {
                m.serialize_entry(key, value)?;
            }
        }
        for (key, value, default) in [
            ("timezone", timezone, d.timezone),
            ("time_format", time_format, d.time_format),
            ("tool_retries_hint", tool_retries_hint, d.tool_retries_hint),
            ("template", template, d.template),
            ("injection_source", injection_source, d.injection_source),
        ] {
            if *value != default {
                m.serialize_entry(key, value)?;
            }
        }
        if time_interval.to_bits() != d.time_interval.to_bits() {
            m.serialize_entry("time_interval", &Float(*time_interval))?;
        }
        if let Some(ratio) = context_buffer_ratio {
            m.serialize_entry("context_buffer_ratio", &Float(*ratio))?;
        }
        if *tool_retries_limit != d.tool_retries_limit {
            m.serialize_entry("tool_retries_limit", tool_retries_limit)?;
        }
        if !task_tool_names.iter().eq(d.task_tool_names.iter()) {
            m.serialize_entry("task_tool_names", &Strings(task_tool_names))?;
        }
        if !extra_fields.is_empty() {
            m.serialize_entry("extra_fields", &Fields(extra_fields))?;
        }
        if !watch.is_empty() {
            m.serialize_entry("watch", &WatchesOut(watch))?;
        }
        m.end()
    }
}

struct ContextOut<'c>(&'c ContextConfig);

impl Serialize for ContextOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ContextConfig {
            trigger_ratio,
            reserve_ratio,
            context_buffer_ratio,
            compression_tool_enabled,
        } = self.0;
        let d = ContextConfig::default();
        let mut m = s.serialize_map(None)?;
        for (key, value, default) in [
            ("trigger_ratio", trigger_ratio, d.trigger_ratio),
            ("reserve_ratio", reserve_ratio, d.reserve_ratio),
            ("context_buffer_ratio", context_buffer_ratio, d.context_buffer_ratio),
        ] {
            if value.to_bits() != default.to_bits() {
                m.serialize_entry(key, &Float(*value))?;
            }
        }
        if *compression_tool_enabled != d.compression_tool_enabled {
            m.serialize_entry("compression_tool_enabled", compression_tool_enabled)?;
        }
        m.end()
    }
}

struct Strings<'c>(&'c StrList<'c>);

impl Serialize for Strings<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

struct Fields<'c>(&'c ExtraFields<'c>);

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter())
    }
}

struct WatchesOut<'c>(&'c WatchList<'c>);

impl Serialize for WatchesOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(name, watch)| (name, WatchOut(watch))))
    }
}

struct WatchOut(Watch);

impl Serialize for WatchOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Watch { change, above, below, hysteresis, min_interval, max_interval } = self.0;
        let mut m = s.serialize_map(None)?;
        for (key, bound) in [("change", change), ("above", above), ("below", below)] {
            if let Some(bound) = bound {
                m.serialize_entry(key, &format_args!("{bound}"))?;
            }
        }
        if hysteresis != Watch::default().hysteresis {
            m.serialize_entry("hysteresis", &format_args!("{hysteresis}"))?;
        }
        for (key, interval) in [("min_interval", min_interval), ("max_interval", max_interval)] {
            if let Some(interval) = interval {
                m.serialize_entry(key, &format_args!("{interval}"))?;
            }
        }
        m.end()
    }
}

/// A float as the loaders read it back: a number, or `"inf"`, `"-inf"`,
/// `"nan"` (serde-json-core writes a non-finite one as `null`).
struct Float(f64);

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            x if x.is_finite() => s.serialize_f64(x),
            x if x.is_nan() => s.serialize_str("nan"),
            x if x > 0.0 => s.serialize_str("inf"),
            _ => s.serialize_str("-inf"),
        }
    }
}
