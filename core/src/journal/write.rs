//! Writing items: the serializer of each event.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};

use super::*;
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
            Event::Log { header, live, agent, steps } => {
                let mut m = s.serialize_struct("Log", 6)?;
                m.serialize_field("version", &header.version)?;
                m.serialize_field("config", &Hex(header.config))?;
                m.serialize_field("capacity", &header.capacity)?;
                m.serialize_field("live", &live)?;
                m.serialize_field("agent", agent)?;
                if steps > 0 {
                    m.serialize_field("steps", &steps)?;
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
            Event::Step { cur_iter, tokens, hint } => {
                let mut m = s.serialize_struct("Step", 3)?;
                if self.1.iter != Some(cur_iter) {
                    m.serialize_field("cur_iter", &cur_iter)?;
                }
                if self.1.tokens != Some(tokens) {
                    m.serialize_field("tokens", &tokens)?;
                }
                m.serialize_field("hint", &hint)?;
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
