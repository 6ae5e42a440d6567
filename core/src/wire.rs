//! AgentScope 2.x JSON on the wire, with no heap (feature `wire`).
//!
//! Writes what the model side expects, into a caller's buffer, with serde
//! and serde-json-core:
//! - [`Engine::write_hint_block`]: the `HintBlock` that
//!   `AgentState.append_context` adds for an injection (`{"type": "hint",
//!   "hint", "id", "source", "created_at", "finished_at"}`), with the
//!   engine's configured source and zone; [`write_hint_block`] takes them
//!   from the caller;
//! - [`write_message`]: a whole `Msg` in `Msg.model_dump_json()`'s key
//!   order (`name`, `content`, `role`, `id`, `metadata`, `created_at`,
//!   `usage`, `finished_at`, `finished_reason`, `structured_output`,
//!   `error`), which `Msg.model_validate_json` reads back.
//!
//! What the context does not keep is written in the shape AgentScope
//! accepts: a [`Block::Other`] (thinking, data: the store keeps no text for
//! it) is a text block with empty text. A hint given as
//! [`HintText::Parts`] is written as AgentScope's list form, one text block
//! per part. Blocks without an id of their own (text, hint) are named
//! `<message id>.<index>`, so a message written twice names its blocks the
//! same way. Timestamps are [`IsoTime`]: Python's `datetime.isoformat()` of
//! a local time, as AgentScope's default timestamp factory writes them.
//!
//! serde-json-core writes strings, numbers, `null`, sequences, structs and
//! (since 0.7) maps, which is all a `Msg` needs; `metadata: {}` is an empty
//! map. It cannot write a `char` or an enum variant with a tuple payload
//! (it panics there), so nothing here asks it to: block variants are written
//! as structs with a `type` key.
//!
//! ```
//! use envaware::wire::{write_message, IsoTime, MessageMeta};
//! use envaware::{Block, Role, SliceMessage, Timestamp};
//! use envaware::Zone;
//!
//! let blocks = [Block::ToolCall { id: "c1", name: "OpenVent", input: r#"{"vent": 2}"# }];
//! let msg = SliceMessage { role: Role::Assistant, name: "Sprout", blocks: &blocks };
//! let created_at = IsoTime { at: Timestamp::from_unix_seconds(1_767_225_600), zone: Zone::Utc };
//! let mut buf = [0u8; 512];
//! let n = write_message(&msg, &MessageMeta { id: "m7", created_at }, &mut buf)?;
//! assert_eq!(
//!     core::str::from_utf8(&buf[..n])?,
//!     r#"{"name":"Sprout","content":[{"type":"tool_call","id":"c1","name":"OpenVent","input":"{\"vent\": 2}"}],"role":"assistant","id":"m7","metadata":{},"created_at":"2026-01-01T00:00:00","usage":null,"finished_at":null,"finished_reason":null,"structured_output":null,"error":null}"#
//! );
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

use core::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};

use crate::clock::Timestamp;
use crate::conversation::{Block, HintText, Message};
use crate::engine::Engine;
use crate::time::{self, CreatedAt, Zone};

/// The JSON did not fit the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct BufferFull {
    /// Bytes the buffer holds.
    pub capacity: usize,
}

impl fmt::Display for BufferFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the output does not fit the {}-byte buffer", self.capacity)
    }
}

impl core::error::Error for BufferFull {}

/// A time as Python's `datetime.isoformat()` writes a naive local time:
/// `2026-01-01T01:00:00`, with `.ffffff` only when there are microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IsoTime {
    /// The instant.
    pub at: Timestamp,
    /// The zone whose wall time is written (AgentScope writes the host's).
    pub zone: Zone,
}

impl fmt::Display for IsoTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let format = if self.at.unix_micros().rem_euclid(1_000_000) == 0 {
            "%Y-%m-%dT%H:%M:%S"
        } else {
            "%Y-%m-%dT%H:%M:%S.%f"
        };
        time::format_time(f, format, self.at, self.zone)
    }
}

impl Serialize for IsoTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// An instant as RFC 3339 in UTC (`2026-07-22T02:00:00Z`), as a replay
/// trace's `set_clock` reads it (the device's stream and its journal both
/// write it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rfc3339(pub Timestamp);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}Z", IsoTime { at: self.0, zone: Zone::Utc })
    }
}

impl Serialize for Rfc3339 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a `Msg` carries besides its sender and blocks.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MessageMeta<'a> {
    /// `Msg.id` (AgentScope: the reply id for the agent's messages).
    pub id: &'a str,
    /// `Msg.created_at`.
    pub created_at: IsoTime,
}

fn to_slice<T: Serialize>(value: &T, out: &mut [u8]) -> Result<usize, BufferFull> {
    let capacity = out.len();
    serde_json_core::to_slice(value, out).map_err(|_| BufferFull { capacity })
}

/// Writes the hint block AgentScope appends for an injection: `source` is
/// the configured `injection_source`, `hint` the rendered text, `at` the
/// block's `created_at` and `finished_at`. Returns the bytes written.
///
/// # Errors
///
/// [`BufferFull`] when the JSON does not fit `out`.
pub fn write_hint_block(
    id: &str,
    source: &str,
    hint: &str,
    at: IsoTime,
    out: &mut [u8],
) -> Result<usize, BufferFull> {
    to_slice(
        &HintOut {
            id: BlockId::Own(id),
            source: Some(source),
            text: HintText::Single(hint),
            at: Some(HintAt::Iso(at)),
        },
        out,
    )
}

impl Engine<'_> {
    /// Writes `hint`, a hint this engine rendered, as the hint block
    /// AgentScope appends for it: with the configured `injection_source`,
    /// and `at`, the step's instant, as its `created_at` and `finished_at`
    /// in UTC (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, [`CreatedAt`]): the instant a
    /// watch's `min_interval` and `max_interval` count from, the same on
    /// every host whatever its zone. `id` is the block's id. Returns the
    /// bytes written. Feature `wire`.
    ///
    /// ```
    /// use envaware::{Config, Engine, FixedClock, InjectionConfig, StepInput, Timestamp, AgentContext};
    ///
    /// let config = Config { injection: InjectionConfig { timezone: "Europe/Berlin", ..Default::default() }, ..Default::default() };
    /// let engine = Engine::new(config)?;
    /// let mut context: AgentContext<'_, 4, 16, 1024> = AgentContext::new(&engine, "rover");
    /// let now = Timestamp::from_unix_seconds(1_784_687_400);
    /// let step = StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 0, context_size: 8192 };
    /// let mut hint = [0u8; 512];
    /// let hint = context.step(&step, &mut FixedClock::at(now), &mut (), &mut hint)?.hint.unwrap();
    /// let mut json = [0u8; 1024];
    /// let n = context.engine().write_hint_block("h1", hint, now, &mut json)?;
    /// let json = core::str::from_utf8(&json[..n])?;
    /// assert!(json.starts_with(r#"{"type":"hint","hint":"<system-reminder>"#));
    /// assert!(json.contains("<current-time>2026-07-22T04:30:00</current-time>"));
    /// assert!(json.ends_with(r#""created_at":"2026-07-22T02:30:00.000000Z","finished_at":"2026-07-22T02:30:00.000000Z"}"#));
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`BufferFull`] when the JSON does not fit `out`.
    pub fn write_hint_block(
        &self,
        id: &str,
        hint: &str,
        at: Timestamp,
        out: &mut [u8],
    ) -> Result<usize, BufferFull> {
        let hint = HintOut {
            id: BlockId::Own(id),
            source: Some(self.config().config().injection.injection_source),
            text: HintText::Single(hint),
            at: Some(HintAt::Created(CreatedAt::Instant(at))),
        };
        to_slice(&hint, out)
    }
}

/// Writes `msg` as an AgentScope `Msg`. Returns the bytes written.
///
/// # Errors
///
/// [`BufferFull`] when the JSON does not fit `out`.
pub fn write_message<M: Message>(
    msg: &M,
    meta: &MessageMeta<'_>,
    out: &mut [u8],
) -> Result<usize, BufferFull> {
    to_slice(&MsgOut { msg, meta }, out)
}

struct MsgOut<'m, M> {
    msg: &'m M,
    meta: &'m MessageMeta<'m>,
}

impl<M: Message> Serialize for MsgOut<'_, M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Msg", 11)?;
        m.serialize_field("name", self.msg.name())?;
        m.serialize_field("content", &Content { msg: self.msg, id: self.meta.id })?;
        m.serialize_field("role", self.msg.role().name())?;
        m.serialize_field("id", self.meta.id)?;
        m.serialize_field("metadata", &EmptyMap)?;
        m.serialize_field("created_at", &self.meta.created_at)?;
        for key in ["usage", "finished_at", "finished_reason", "structured_output", "error"] {
            m.serialize_field(key, &None::<()>)?;
        }
        m.end()
    }
}

/// `{}`.
struct EmptyMap;

impl Serialize for EmptyMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_map(Some(0))?.end()
    }
}

/// A message's `content` list (the `journal` writes it for its `message`
/// and `assistant` events).
pub(crate) struct Content<'m, M> {
    pub(crate) msg: &'m M,
    pub(crate) id: &'m str,
}

impl<M: Message> Serialize for Content<'_, M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.msg.block_count()))?;
        for index in 0..self.msg.block_count() {
            let Some(block) = self.msg.block(index) else { continue };
            let id = BlockId::Derived(self.id, index);
            match block {
                Block::Hint { source, text, created_at } => seq.serialize_element(&HintOut {
                    id,
                    source,
                    text,
                    at: created_at.map(HintAt::Created),
                })?,
                Block::ToolCall { id, name, input } => {
                    seq.serialize_element(&ToolCallOut { id, name, input })?
                }
                Block::ToolResult { id, name, state, output } => {
                    seq.serialize_element(&ToolResultOut { id, name, state: state.name(), output })?
                }
                Block::Text(text) => seq.serialize_element(&TextOut { id, text })?,
                Block::Other => seq.serialize_element(&TextOut { id, text: "" })?,
            }
        }
        seq.end()
    }
}

/// A block's id: its own, or `<message id>.<index>`.
#[derive(Clone, Copy)]
enum BlockId<'a> {
    Own(&'a str),
    Derived(&'a str, usize),
}

impl fmt::Display for BlockId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockId::Own(id) => f.write_str(id),
            BlockId::Derived(msg, index) => write!(f, "{msg}.{index}"),
        }
    }
}

impl Serialize for BlockId<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

struct HintOut<'a> {
    id: BlockId<'a>,
    source: Option<&'a str>,
    text: HintText<'a>,
    at: Option<HintAt>,
}

/// A hint block's `created_at` and `finished_at`: a caller's local time,
/// or a hint's own [`CreatedAt`] (`…Z` for the hints envaware appends).
#[derive(Clone, Copy)]
enum HintAt {
    Iso(IsoTime),
    Created(CreatedAt),
}

impl Serialize for HintAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            HintAt::Iso(at) => at.serialize(s),
            HintAt::Created(at) => s.collect_str(at),
        }
    }
}

impl Serialize for HintOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("HintBlock", 6)?;
        m.serialize_field("type", "hint")?;
        match self.text {
            HintText::Single(text) => m.serialize_field("hint", text)?,
            HintText::Parts(parts) => m.serialize_field("hint", &Parts { parts, id: self.id })?,
        }
        m.serialize_field("id", &self.id)?;
        m.serialize_field("source", &self.source)?;
        if let Some(at) = self.at {
            m.serialize_field("created_at", &at)?;
            m.serialize_field("finished_at", &at)?;
        }
        m.end()
    }
}

/// A list hint: one text block per part.
struct Parts<'a> {
    parts: &'a [&'a str],
    id: BlockId<'a>,
}

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.parts.len()))?;
        for (i, text) in self.parts.iter().enumerate() {
            seq.serialize_element(&TextOut { id: PartId(self.id, i), text })?;
        }
        seq.end()
    }
}

/// A part's id: `<hint id>.<part index>`.
#[derive(Clone, Copy)]
struct PartId<'a>(BlockId<'a>, usize);

impl fmt::Display for PartId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl Serialize for PartId<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

struct TextOut<'a, I> {
    id: I,
    text: &'a str,
}

impl<I: Serialize> Serialize for TextOut<'_, I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("TextBlock", 3)?;
        m.serialize_field("type", "text")?;
        m.serialize_field("text", self.text)?;
        m.serialize_field("id", &self.id)?;
        m.end()
    }
}

struct ToolCallOut<'a> {
    id: &'a str,
    name: &'a str,
    input: &'a str,
}

impl Serialize for ToolCallOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("ToolCallBlock", 4)?;
        m.serialize_field("type", "tool_call")?;
        m.serialize_field("id", self.id)?;
        m.serialize_field("name", self.name)?;
        m.serialize_field("input", self.input)?;
        m.end()
    }
}

struct ToolResultOut<'a> {
    id: &'a str,
    name: &'a str,
    state: &'a str,
    output: &'a str,
}

impl Serialize for ToolResultOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("ToolResultBlock", 5)?;
        m.serialize_field("type", "tool_result")?;
        m.serialize_field("id", self.id)?;
        m.serialize_field("name", self.name)?;
        m.serialize_field("output", self.output)?;
        m.serialize_field("state", self.state)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{Role, SliceMessage, ToolResultState};

    fn written<F: FnOnce(&mut [u8]) -> Result<usize, BufferFull>>(f: F) -> std::string::String {
        let mut buf = [0u8; 2048];
        let n = f(&mut buf).unwrap();
        std::string::String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    extern crate std;

    #[test]
    fn a_full_buffer_says_its_size() {
        use std::string::ToString;
        assert_eq!(
            BufferFull { capacity: 64 }.to_string(),
            "the output does not fit the 64-byte buffer"
        );
    }

    #[test]
    fn hint_block_as_append_context_adds_it() {
        let at = IsoTime {
            at: Timestamp::from_unix_micros(1_767_225_600_123_456),
            zone: time::resolve_zone("Europe/Berlin").unwrap(),
        };
        let json =
            written(|b| write_hint_block("h1", "{\"label\": \"System\"}", "<x>\"a\"\n</x>", at, b));
        assert_eq!(
            json,
            r#"{"type":"hint","hint":"<x>\"a\"\n</x>","id":"h1","source":"{\"label\": \"System\"}","created_at":"2026-01-01T01:00:00.123456","finished_at":"2026-01-01T01:00:00.123456"}"#
        );
    }

    /// The engine's one call writes what [`write_hint_block`] writes with
    /// the configured source and zone (UTC when the zone fell back).
    #[test]
    fn the_engines_hint_block_has_its_source_and_its_instant_in_utc() {
        use crate::config::{Config, InjectionConfig};
        let source = "{\"label\": \"System\"}";
        let (at, hint) = (Timestamp::from_unix_micros(1_767_225_600_123_456), "<x>\"a\"\n</x>");
        let mut outputs = std::vec::Vec::new();
        // Whatever the zone: the instant a watch's time rules count from.
        for timezone in ["Europe/Berlin", "Mars/Olympus_Mons"] {
            let injection =
                InjectionConfig { timezone, injection_source: source, ..Default::default() };
            let engine = Engine::new(Config { injection, ..Default::default() }).unwrap();
            let json = written(|b| engine.write_hint_block("h1", hint, at, b));
            let mut small = [0u8; 40];
            assert_eq!(
                engine.write_hint_block("h1", hint, at, &mut small),
                Err(BufferFull { capacity: 40 })
            );
            outputs.push(json);
        }
        let utc = r#"{"type":"hint","hint":"<x>\"a\"\n</x>","id":"h1","source":"{\"label\": \"System\"}","created_at":"2026-01-01T00:00:00.123456Z","finished_at":"2026-01-01T00:00:00.123456Z"}"#;
        assert_eq!(outputs, [utc, utc]);
        // A caller's local time, as AgentScope writes the host's.
        let berlin = time::resolve_zone("Europe/Berlin").unwrap();
        assert_eq!(
            written(|b| write_hint_block("h1", source, hint, IsoTime { at, zone: berlin }, b)),
            r#"{"type":"hint","hint":"<x>\"a\"\n</x>","id":"h1","source":"{\"label\": \"System\"}","created_at":"2026-01-01T01:00:00.123456","finished_at":"2026-01-01T01:00:00.123456"}"#
        );
    }

    #[test]
    fn every_block_kind_and_a_full_buffer() {
        let parts = ["<current-time>", "x</current-time>"];
        let blocks = [
            Block::Other,
            Block::Hint { source: None, text: HintText::Parts(&parts), created_at: None },
            Block::ToolResult { id: "c1", name: "Bash", state: ToolResultState::Error, output: "" },
        ];
        let msg = SliceMessage { role: Role::Assistant, name: "a", blocks: &blocks };
        let meta =
            MessageMeta { id: "m", created_at: IsoTime { at: Timestamp(0), zone: Zone::Utc } };
        let json = written(|b| write_message(&msg, &meta, b));
        assert!(json.starts_with(
            r#"{"name":"a","content":[{"type":"text","text":"","id":"m.0"},{"type":"hint","hint":[{"type":"text","text":"<current-time>","id":"m.1.0"},{"type":"text","text":"x</current-time>","id":"m.1.1"}],"id":"m.1","source":null},{"type":"tool_result","id":"c1","name":"Bash","output":"","state":"error"}],"role":"assistant","id":"m","metadata":{},"created_at":"1970-01-01T00:00:00","#
        ), "{json}");
        let mut small = [0u8; 40];
        assert_eq!(write_message(&msg, &meta, &mut small), Err(BufferFull { capacity: 40 }));
    }
}
