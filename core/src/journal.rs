//! The session as an append-only log, read back after a reset (feature
//! `journal`; see `docs/reboot.md`).
//!
//! Every change of an [`AgentContext`] goes through a [`Journal`], which
//! writes it as one item (a JSON object, the replay trace format of
//! `envaware-sim replay`) into a caller's buffer; the caller appends the item
//! to its store (sequential-storage's queue on a device). After a reset the
//! items are read back, in order, into an empty context: each is applied by
//! the same code that applied it live ([`Journal::record`]), so the context
//! and its tracker decide as before the reset.
//!
//! Items: `{"#": n, "<event>": value}`, `n` counting the log's items (a gap
//! means an item was lost), the event one of `log` (the header: version,
//! configuration hash, and how many items before it are still needed),
//! `config` (agent name and context size, when they change), `set_clock`,
//! `tasks`, `user`, `message`, `assistant`, `tool_call`, `tool_result`,
//! `reply`, `compress` and `step`. A step is logged with the hint it
//! appended (`"hint"`): restoring appends that hint as it was, never decides
//! again.
//!
//! Restoring is two passes over the log: [`Journal::check`] reads every
//! item's number and every header (a log of another version or
//! configuration is refused before anything is applied), then
//! [`Journal::restore`] applies the items the context still needs. Any error
//! names the item; the caller then starts from an empty context.
//!
//! When the log's region fills, [`Journal::compaction_header`] and
//! [`Journal::dead_items`] let the caller append a new header and pop the
//! items the context no longer needs: those before the event that created
//! the oldest message it holds. Replaying from that event rebuilds exactly
//! the messages held (eviction takes the oldest first), and a power cut
//! between the new header and the last pop leaves a log that restores the
//! same context.
//!
//! ```
//! use envaware::journal::{Event, Journal};
//! use envaware::{Config, Engine, FixedClock, StepInput, Timestamp, AgentContext};
//!
//! let engine = Engine::new(Config::default())?;
//! let mut live: AgentContext<'_, 8, 32, 2048> = AgentContext::new(&engine, "rover");
//! let mut journal = Journal::new(&live);
//! let (mut buf, mut hint) = ([0u8; 1024], [0u8; 512]);
//! let mut log: Vec<Vec<u8>> = Vec::new(); // the device's flash queue
//!
//! let n = journal.start(&live, &mut buf)?;
//! log.push(buf[..n].to_vec());
//! let items = journal.record(&mut live, &Event::User { name: "operator" }, &mut buf)?;
//! log.extend(items.iter(&buf).map(<[u8]>::to_vec));
//! let step = StepInput { tasks: Default::default(), cur_iter: 0, input_tokens: 900, context_size: 8192 };
//! let now = Some(Timestamp::from_unix_seconds(1_784_687_400));
//! let (outcome, items) = journal.step(&mut live, &step, now, &mut (), &mut hint, &mut buf)?;
//! assert!(outcome.hint.is_some());
//! log.extend(items.iter(&buf).map(<[u8]>::to_vec));
//!
//! // After a reset: an empty context, the log read back.
//! let mut restored: AgentContext<'_, 8, 32, 2048> = AgentContext::new(&engine, "rover");
//! let mut journal = Journal::new(&restored);
//! let mut scratch = [0u8; 1024];
//! for item in &log {
//!     journal.check(item)?;
//! }
//! for item in &log {
//!     journal.restore(&mut restored, item, &mut scratch)?;
//! }
//! assert_eq!(journal.restored_events(), 5); // user, config, tasks, set_clock, step
//! assert_eq!(restored.len(), live.len());
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

use core::fmt;
use core::hash::{Hash as _, Hasher as _};

use heapless::Deque;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use siphasher::sip::SipHasher13;

use crate::clock::Timestamp;
use crate::config::{Config, ContextConfig, InjectionConfig};
use crate::conversation::{Block, HintText, Role, SliceMessage, ToolResultState};
use crate::engine::{Engine, Outcome};
use crate::json::{self, JsonError, JsonStr, Kind, Value};
use crate::live::LiveFields;
use crate::rules::{Decision, StepInput, TaskCounts};
use crate::store::StoreError;
use crate::agent_context::{AgentContext, StepError};
use crate::config::watch::Watch;
use crate::wire::{BufferFull, Content, Rfc3339};

/// The log format's version, in every header.
pub const VERSION: u32 = 1;

/// The most blocks a `message` or `assistant` item may hold.
pub const MAX_EVENT_BLOCKS: usize = 16;

/// Nesting an item may have (`{"message": {"content": [{"hint": [{…}]}]}}`).
const MAX_DEPTH: usize = 6;

/// What a log was written for: restoring it elsewhere would not rebuild the
/// same decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Header {
    /// [`VERSION`] when written.
    pub version: u32,
    /// A hash of the validated configuration, the agent's name and the
    /// context's capacities.
    pub config: u64,
}

impl Header {
    /// The header of `context`'s log.
    pub fn of<const M: usize, const B: usize, const T: usize>(context: &AgentContext<'_, M, B, T>) -> Header {
        let mut hasher = SipHasher13::new_with_keys(0x656e_7661_7761_7265, 0x6a6f_7572_6e61_6c31);
        hash_config(&mut hasher, context.engine().config().config());
        write_str(&mut hasher, context.agent_name());
        for capacity in [M, B, T] {
            hasher.write_u64(capacity as u64);
        }
        Header { version: VERSION, config: hasher.finish() }
    }
}

/// Hashes every field of the configuration: the destructuring names them
/// all, so a new field does not compile until it is hashed too.
fn hash_config(h: &mut SipHasher13, config: &Config<'_>) {
    let Config { injection, context } = config;
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
    } = injection;
    let ContextConfig { trigger_ratio, reserve_ratio, context_buffer_ratio: buffer, compression_tool_enabled } = context;
    for flag in [inject_runtime_state, emit_hint_event, strict, filtered_zone_falls_back_to_utc, compression_tool_enabled] {
        h.write_u8(u8::from(*flag));
    }
    for text in [timezone, time_format, tool_retries_hint, template, injection_source] {
        write_str(h, text);
    }
    for number in [Some(*time_interval), *context_buffer_ratio, Some(*trigger_ratio), Some(*reserve_ratio), Some(*buffer)] {
        h.write_u64(number.map_or(u64::MAX, f64::to_bits));
    }
    h.write_u64(*tool_retries_limit);
    h.write_usize(task_tool_names.len());
    task_tool_names.iter().for_each(|name| write_str(h, name));
    h.write_usize(extra_fields.len());
    for (key, value) in extra_fields.iter() {
        write_str(h, key);
        write_str(h, value);
    }
    h.write_usize(watch.len());
    for (field, Watch { change, above, below, hysteresis }) in watch.iter() {
        write_str(h, field);
        (change, above, below, hysteresis).hash(h);
    }
}

/// A string, length first, so that neighbours cannot trade bytes.
fn write_str(h: &mut SipHasher13, text: &str) {
    h.write_usize(text.len());
    h.write(text.as_bytes());
}

/// One event of a session, as a log item holds it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// `log`: the header, and how many items before it are still needed.
    Log {
        /// Version and configuration.
        header: Header,
        /// Items before this one that the context still needs.
        live: u32,
        /// The agent whose context it is (a replay reads its name here, before
        /// the first step's `config`).
        agent: &'a str,
        /// Steps the session took before this header (written when not 0):
        /// a compacted log still knows how far its session went.
        steps: u64,
    },
    /// `config`: the agent and the context window its steps had, where it
    /// changed (the desktop replay reads it).
    Config {
        /// The agent's name.
        agent_name: &'a str,
        /// The model's context window.
        context_size: i64,
    },
    /// `set_clock`: the time of the next step (`None`: unknown).
    SetClock(Option<Timestamp>),
    /// `tasks`: the plan's counts, where they changed.
    Tasks(TaskCounts),
    /// `user`: [`AgentContext::user`].
    User {
        /// The sender.
        name: &'a str,
    },
    /// `message`: [`AgentContext::observe`].
    Message {
        /// The sender's role.
        role: Role,
        /// The sender.
        name: &'a str,
        /// At most [`MAX_EVENT_BLOCKS`].
        blocks: &'a [Block<'a>],
    },
    /// `assistant`: [`AgentContext::agent`], at most [`MAX_EVENT_BLOCKS`].
    Assistant(&'a [Block<'a>]),
    /// `tool_call`: [`AgentContext::tool_call`].
    ToolCall {
        /// The call's id.
        id: &'a str,
        /// The tool.
        name: &'a str,
        /// The arguments' raw text.
        input: &'a str,
    },
    /// `tool_result`: [`AgentContext::tool_result`].
    ToolResult {
        /// The call's id.
        id: &'a str,
        /// The tool.
        name: &'a str,
        /// How it ended.
        state: ToolResultState,
    },
    /// `reply`: [`AgentContext::new_reply`].
    Reply,
    /// `compress`: [`AgentContext::compress`].
    Compress {
        /// Messages kept.
        keep: usize,
    },
    /// `read`: the live fields' values at a step, where they changed
    /// since the log said them last (written by [`Journal::step`]: the
    /// desktop replay decides with them; a restore applies nothing).
    Read(Readings<'a>),
    /// `step`: a step, and the hint it appended ([`AgentContext::append_hint`]).
    Step {
        /// The step's iteration in its reply.
        cur_iter: u64,
        /// The prepared input's tokens.
        tokens: i64,
        /// The hint appended, if any.
        hint: Option<&'a str>,
    },
}

impl Event<'_> {
    /// The event's name: a clock moved from the one the log last set is
    /// written as an `advance`, shorter than a new `set_clock`.
    fn key(&self, said: &Said) -> &'static str {
        match self {
            Event::Log { .. } => "log",
            Event::Config { .. } => "config",
            Event::SetClock(now) if said.advance(*now).is_some() => "advance",
            Event::SetClock(_) => "set_clock",
            Event::Tasks(_) => "tasks",
            Event::User { .. } => "user",
            Event::Message { .. } => "message",
            Event::Assistant(_) => "assistant",
            Event::ToolCall { .. } => "tool_call",
            Event::ToolResult { .. } => "tool_result",
            Event::Reply => "reply",
            Event::Compress { .. } => "compress",
            Event::Read(_) => "read",
            Event::Step { .. } => "step",
        }
    }
}

/// A step's live values in a [`Event::Read`]: the fields as the step
/// left them (those read for it), and a hash of them, by which the log
/// writes them again only when they changed.
#[derive(Clone, Copy)]
pub struct Readings<'a> {
    /// `None` when read back from a log (a restore needs only the hash).
    fields: Option<&'a dyn LiveFields>,
    hash: u64,
}

impl fmt::Debug for Readings<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readings").field("hash", &self.hash).finish_non_exhaustive()
    }
}

impl<'a> Readings<'a> {
    fn of(fields: &'a dyn LiveFields) -> Self {
        let mut hasher = SipHasher13::new();
        for (name, value) in (0..fields.len()).filter_map(|i| fields.field(i)) {
            hash_code_points(&mut hasher, name.chars().map(u32::from));
            hash_code_points(&mut hasher, value.chars().map(u32::from));
        }
        Readings { fields: Some(fields), hash: hasher.finish() }
    }

    /// The hash of a `read` item's value, as [`of`](Self::of) hashes the
    /// fields that wrote it (strings decoded; `null` is unavailable).
    fn read(value: Value<'_>) -> Result<Self, ItemError> {
        if value.kind() != Kind::Object {
            return Err(ItemError::Field("read"));
        }
        let mut hasher = SipHasher13::new();
        for (name, reading) in value.members() {
            hash_code_points(&mut hasher, name.code_points());
            match (reading.kind(), reading.as_str()) {
                (_, Some(text)) => hash_code_points(&mut hasher, text.code_points()),
                (Kind::Null, _) => hash_code_points(&mut hasher, crate::UNAVAILABLE.chars().map(u32::from)),
                _ => return Err(ItemError::Field("read")),
            }
        }
        Ok(Readings { fields: None, hash: hasher.finish() })
    }
}

/// One text into a readings hash, closed by a value no code point has.
fn hash_code_points(h: &mut SipHasher13, text: impl Iterator<Item = u32>) {
    for c in text {
        h.write_u32(c);
    }
    h.write_u32(u32::MAX);
}

/// `L` behind a sized reference, so that a step's fields, of any type,
/// can be an `&dyn LiveFields` in its `read` item.
struct Live<'a, L: ?Sized>(&'a L);

impl<L: LiveFields + ?Sized> LiveFields for Live<'_, L> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        self.0.field(i)
    }
}

/// What is wrong with a log item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ItemError {
    /// The bytes are not UTF-8.
    NotUtf8,
    /// The text is not JSON.
    Json(JsonError),
    /// Not an object of an item number (`"#"`) and one event.
    NotAnItem,
    /// The event's name is not one the log writes.
    UnknownEvent,
    /// This field of the event is missing or not of its type.
    Field(&'static str),
    /// The item's number does not follow the previous item's: one was lost.
    Gap {
        /// The number expected.
        expected: u32,
        /// The number found.
        found: u32,
    },
    /// A header of another format version.
    Version {
        /// The version found.
        found: u32,
    },
    /// A header of another configuration (or agent, or context capacity).
    Config {
        /// The hash found.
        found: u64,
        /// This context's hash.
        expected: u64,
    },
    /// The log holds no header.
    MissingHeader,
    /// The check pass did not read this item.
    Unchecked,
    /// The item's decoded strings do not fit the scratch buffer.
    ScratchFull,
    /// The item holds more than [`MAX_EVENT_BLOCKS`] blocks.
    TooManyBlocks,
    /// The context could not apply the event.
    Store(StoreError),
}

impl fmt::Display for ItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemError::NotUtf8 => f.write_str("not UTF-8"),
            ItemError::Json(e) => write!(f, "not JSON: {e}"),
            ItemError::NotAnItem => f.write_str("not an object of an item number \"#\" and one event"),
            ItemError::UnknownEvent => f.write_str("unknown event"),
            ItemError::Field(name) => write!(f, "field {name:?} missing or of the wrong type"),
            ItemError::Gap { expected, found } => write!(f, "item number {found}, expected {expected}: an item was lost"),
            ItemError::Version { found } => write!(f, "log format version {found}, this build reads {VERSION}"),
            ItemError::Config { found, expected } => {
                write!(f, "written for configuration {found:016x}, this context is {expected:016x}")
            }
            ItemError::MissingHeader => f.write_str("the log has no header"),
            ItemError::Unchecked => f.write_str("not read by the check pass"),
            ItemError::ScratchFull => f.write_str("its strings do not fit the scratch buffer"),
            ItemError::TooManyBlocks => write!(f, "more than {MAX_EVENT_BLOCKS} blocks"),
            ItemError::Store(e) => write!(f, "the context refused it: {e}"),
        }
    }
}

/// A log that cannot be restored: which item (counted from the first read,
/// from 0), and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LogError {
    /// The item's position in the log as read.
    pub index: u32,
    /// What is wrong with it.
    pub kind: ItemError,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "log item {}: {}", self.index, self.kind)
    }
}

impl core::error::Error for LogError {}

/// Why an event could not be recorded. Nothing was applied then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RecordError {
    /// The item does not fit the caller's buffer.
    BufferFull(BufferFull),
    /// The step failed (its hint too long, or the store refused it).
    Step(StepError),
    /// [`Journal::record`] was given a `log` event, which only
    /// [`Journal::start`] and [`Journal::compaction_header`] write.
    NotRecordable,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::BufferFull(e) => write!(f, "the log item: {e}"),
            RecordError::Step(e) => e.fmt(f),
            RecordError::NotRecordable => f.write_str("a header is written by start or compaction_header"),
        }
    }
}

impl core::error::Error for RecordError {}

impl From<BufferFull> for RecordError {
    fn from(e: BufferFull) -> Self {
        RecordError::BufferFull(e)
    }
}

impl From<StepError> for RecordError {
    fn from(e: StepError) -> Self {
        RecordError::Step(e)
    }
}

impl From<StoreError> for RecordError {
    fn from(e: StoreError) -> Self {
        RecordError::Step(StepError::Store(e))
    }
}

/// The items one call writes back to back into one buffer (a step: up to
/// five).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Items {
    ends: [usize; 5],
    count: usize,
}

impl Items {
    /// How many items.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The items, in the order to append them, from the buffer they were
    /// written to.
    pub fn iter<'b>(&self, buf: &'b [u8]) -> impl Iterator<Item = &'b [u8]> {
        let Items { ends, count } = *self;
        core::iter::once(0).chain(ends).zip(ends).take(count).filter_map(move |(start, end)| buf.get(start..end))
    }
}

/// The bookkeeping of one context's log: see the module docs.
#[derive(Debug, Clone)]
pub struct Journal<const MESSAGES: usize> {
    header: Header,
    /// The number the next item gets.
    next: u32,
    /// Items in the log.
    items: u32,
    /// The position of the item that created each message the context
    /// holds, oldest first.
    created: Deque<u32, MESSAGES>,
    /// What the log says last, to write `config`, `tasks` and `set_clock`
    /// only when they change.
    said: Said,
    /// The check pass: items read, the last header's position and the
    /// items before it that it still needs.
    checked: u32,
    last_header: Option<(u32, u32)>,
    restored: u32,
    /// Steps the session took, across compactions.
    steps: u64,
}

/// What the log last said, as the replay keeps it: `None` where it is
/// unknown (the log's start, or after a header or a restore).
#[derive(Debug, Clone, Copy, Default)]
struct Said {
    config: Option<i64>,
    tasks: Option<TaskCounts>,
    clock: Option<Option<Timestamp>>,
    tokens: Option<i64>,
    /// The hash of the live values said last.
    readings: Option<u64>,
    /// The replay's default `cur_iter` for the next step: 0 after a user
    /// message or a `reply`, one more than the last step's otherwise.
    iter: Option<u64>,
}

impl Said {
    /// How far the clock moved, in microseconds, when the log set it last.
    fn advance(&self, now: Option<Timestamp>) -> Option<i64> {
        match (self.clock, now) {
            (Some(Some(then)), Some(now)) => now.unix_micros().checked_sub(then.unix_micros()),
            _ => None,
        }
    }

    /// Takes `event` into account, as the replay does.
    fn note(&mut self, event: &Event<'_>) {
        match *event {
            Event::Config { context_size, .. } => self.config = Some(context_size),
            Event::Tasks(counts) => self.tasks = Some(counts),
            Event::SetClock(now) => self.clock = Some(now),
            Event::Read(readings) => self.readings = Some(readings.hash),
            Event::User { .. } | Event::Reply => self.iter = Some(0),
            Event::Step { cur_iter, tokens, .. } => {
                self.iter = Some(cur_iter.saturating_add(1));
                self.tokens = Some(tokens);
            }
            Event::Log { .. } => *self = Said::default(),
            _ => {}
        }
    }
}

impl<const MESSAGES: usize> Journal<MESSAGES> {
    /// The journal of `context` (empty), before a log is started or read.
    pub fn new<const B: usize, const T: usize>(context: &AgentContext<'_, MESSAGES, B, T>) -> Self {
        Journal {
            header: Header::of(context),
            next: 0,
            items: 0,
            created: Deque::new(),
            said: Said::default(),
            checked: 0,
            last_header: None,
            restored: 0,
            steps: 0,
        }
    }

    /// The header this journal writes and accepts.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Items in the log, as the journal counts them.
    pub fn items(&self) -> u32 {
        self.items
    }

    /// Events applied by [`restore`](Self::restore) (headers not counted).
    pub fn restored_events(&self) -> u32 {
        self.restored
    }

    /// Steps the session took: those [`step`](Self::step) logged, or
    /// [`restore`](Self::restore) read back, also those a compaction popped
    /// (each header says how many came before it). A device resuming a
    /// script goes on from here.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The clock the log set last: after [`restore`](Self::restore) of a
    /// `step` item's clock, the time that step was decided at (a device's
    /// transcript stamps the messages it restores with it). `None` when
    /// the log has not set it, set it unknown, or advanced it from a clock
    /// a compaction popped.
    pub fn clock(&self) -> Option<Timestamp> {
        self.said.clock.flatten()
    }

    /// Writes the header that starts a new log (the log must be empty).
    ///
    /// # Errors
    ///
    /// When the item does not fit `out`.
    pub fn start<const B: usize, const T: usize>(
        &mut self,
        context: &AgentContext<'_, MESSAGES, B, T>,
        out: &mut [u8],
    ) -> Result<usize, BufferFull> {
        self.write(&Event::Log { header: self.header, live: 0, agent: context.agent_name(), steps: self.steps }, out)
    }

    /// Writes `event` as the next item. The log says again, after a header,
    /// what a step needs (configuration, tasks, clock, tokens): a replay
    /// that starts at a compaction reads it there.
    fn write(&mut self, event: &Event<'_>, out: &mut [u8]) -> Result<usize, BufferFull> {
        let capacity = out.len();
        let n = serde_json_core::to_slice(&ItemOut { n: self.next, event, said: &self.said }, out).map_err(|_| BufferFull { capacity })?;
        self.next = self.next.wrapping_add(1);
        self.items = self.items.saturating_add(1);
        self.said.note(event);
        self.steps += u64::from(matches!(event, Event::Step { .. }));
        Ok(n)
    }

    /// Applies `event` to `context` and writes it to `out` as the next item
    /// (two when the store evicted messages, see `logged`), which the caller
    /// appends to the log in order.
    ///
    /// # Errors
    ///
    /// When the items do not fit `out` or the context refuses the event:
    /// then nothing was applied or counted, and nothing is to be appended.
    pub fn record<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        event: &Event<'_>,
        out: &mut [u8],
    ) -> Result<Items, RecordError> {
        if matches!(event, Event::Log { .. }) {
            return Err(RecordError::NotRecordable);
        }
        self.all_or_nothing(|journal| {
            let mut items = Items::default();
            journal.logged(context, event, out, &mut items)?;
            Ok(items)
        })
    }

    /// Runs `write`; when it fails, the journal is as it was before it
    /// (nothing counted, nothing said), as the caller appends nothing.
    fn all_or_nothing<R>(&mut self, write: impl FnOnce(&mut Self) -> Result<R, RecordError>) -> Result<R, RecordError> {
        let saved = (self.next, self.items, self.said, self.created.clone());
        let result = write(self);
        if result.is_err() {
            (self.next, self.items, self.said, self.created) = saved;
        }
        result
    }

    /// Writes `event` as the next item and applies it; when the store
    /// evicted messages to make room, a `compress` item follows, so that a
    /// replay without the store's capacity keeps the same messages.
    fn logged<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        event: &Event<'_>,
        out: &mut [u8],
        items: &mut Items,
    ) -> Result<(), RecordError> {
        self.push_item(event, out, items)?;
        if self.apply(context, event, self.items - 1)? > 0 {
            let kept = Event::Compress { keep: context.len() };
            self.push_item(&kept, out, items)?;
            self.apply(context, &kept, self.items - 1)?;
        }
        Ok(())
    }

    /// Applies `event` (the item at position `index`), as live and restore
    /// both do, and keeps track of the item that created each message.
    fn apply<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        event: &Event<'_>,
        index: u32,
    ) -> Result<usize, StoreError> {
        let newest = context.sequence(0);
        let evicted = match *event {
            Event::User { name } => context.user(name)?.evicted,
            Event::Message { role, name, blocks } => context.observe(role, name, blocks)?.evicted,
            Event::Assistant(blocks) => context.agent(blocks)?.evicted,
            Event::ToolCall { id, name, input } => context.tool_call(id, name, input)?.evicted,
            Event::ToolResult { id, name, state } => context.tool_result(id, name, state)?.evicted,
            Event::Step { hint: Some(hint), .. } => context.append_hint(hint)?.evicted,
            Event::Reply => {
                context.new_reply();
                0
            }
            Event::Compress { keep } => {
                context.compress(keep);
                0
            }
            Event::Step { hint: None, .. }
            | Event::Config { .. }
            | Event::Tasks(_)
            | Event::SetClock(_)
            | Event::Read(_)
            | Event::Log { .. } => 0,
        };
        if context.sequence(0).is_some() && context.sequence(0) != newest {
            if self.created.is_full() {
                self.created.pop_front();
            }
            let _ = self.created.push_back(index);
        }
        while self.created.len() > context.len() {
            self.created.pop_front();
        }
        Ok(evicted)
    }

    /// One step, logged: writes `config`, `tasks` and `set_clock` items
    /// where they changed, decides, renders the hint into `hint_out`, and
    /// writes the `step` item with it; then appends the hint (as
    /// [`AgentContext::step`]). The items are in `items_out`, to append
    /// in order.
    ///
    /// # Errors
    ///
    /// As [`AgentContext::step`], or when the items do not fit
    /// `items_out`: nothing was appended to the context then, and no item
    /// is to be appended to the log.
    pub fn step<'h, const B: usize, const T: usize, L: LiveFields + ?Sized>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        step: &StepInput,
        now: Option<Timestamp>,
        live: &mut L,
        hint_out: &'h mut [u8],
        items_out: &mut [u8],
    ) -> Result<(Outcome<'h>, Items), RecordError> {
        self.all_or_nothing(|journal| {
            // As `AgentContext::step`: the watched fields are read before deciding.
            let (decision, mut items) = journal.decide_items(context, step, now, |engine| engine.read_watched(live), items_out)?;
            let outcome = journal.render_items(context, decision, step, live, hint_out, items_out, &mut items)?;
            Ok((outcome, items))
        })
    }

    /// The first half of a split step, logged (as
    /// [`AgentContext::decide_with_readings`]): writes `config`, `tasks` and
    /// `set_clock` items where they changed, into `items_out`, and decides
    /// with the watched fields' `readings` (awaited by the caller). Append
    /// the items, then read what the decision needs and call
    /// [`render_step`](Self::render_step).
    ///
    /// # Errors
    ///
    /// When the items do not fit `items_out`: nothing was counted then, and
    /// no item is to be appended.
    pub fn decide<const B: usize, const T: usize, L: LiveFields + ?Sized>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        step: &StepInput,
        now: Option<Timestamp>,
        readings: &L,
        items_out: &mut [u8],
    ) -> Result<(Decision, Items), RecordError> {
        self.all_or_nothing(|journal| journal.decide_items(context, step, now, |_| readings, items_out))
    }

    /// The second half of a split step, logged: refreshes `live` when the
    /// `decision` of [`decide`](Self::decide) fires, renders the hint into
    /// `hint_out`, writes the `step` item into `items_out` and appends the
    /// hint (as [`AgentContext::render_step`]).
    ///
    /// # Errors
    ///
    /// As [`AgentContext::render_step`], or when the item does not fit
    /// `items_out`: nothing was appended or counted then.
    pub fn render_step<'h, const B: usize, const T: usize, L: LiveFields + ?Sized>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        decision: Decision,
        step: &StepInput,
        live: &mut L,
        hint_out: &'h mut [u8],
        items_out: &mut [u8],
    ) -> Result<(Outcome<'h>, Items), RecordError> {
        self.all_or_nothing(|journal| {
            let mut items = Items::default();
            let outcome = journal.render_items(context, decision, step, live, hint_out, items_out, &mut items)?;
            Ok((outcome, items))
        })
    }

    /// Writes the items a step's decision needs before it, and decides with
    /// the readings `read` gives.
    fn decide_items<'r, const B: usize, const T: usize, L: LiveFields + ?Sized + 'r>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        step: &StepInput,
        now: Option<Timestamp>,
        read: impl FnOnce(&Engine<'_>) -> &'r L,
        items_out: &mut [u8],
    ) -> Result<(Decision, Items), RecordError> {
        let mut items = Items::default();
        let mut before = [None, None, None];
        if self.said.config != Some(step.context_size) {
            before[0] = Some(Event::Config { agent_name: context.agent_name(), context_size: step.context_size });
        }
        if self.said.tasks != Some(step.tasks) {
            before[1] = Some(Event::Tasks(step.tasks));
        }
        if self.said.clock != Some(now) {
            before[2] = Some(Event::SetClock(now));
        }
        for event in before.iter().flatten() {
            self.logged(context, event, items_out, &mut items)?;
        }
        let engine = *context.engine();
        let decision = context.decide_with_readings(step, now, read(&engine));
        Ok((decision, items))
    }

    /// Renders `decision`, writes the `step` item after `items` and appends the hint.
    #[allow(clippy::too_many_arguments)]
    fn render_items<'h, const B: usize, const T: usize, L: LiveFields + ?Sized>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        decision: Decision,
        step: &StepInput,
        live: &mut L,
        hint_out: &'h mut [u8],
        items_out: &mut [u8],
        items: &mut Items,
    ) -> Result<Outcome<'h>, RecordError> {
        let engine = *context.engine();
        let outcome = engine.render_step(decision, context.store(), live, hint_out).map_err(StepError::from)?;
        let fields = Live(&*live);
        let readings = Readings::of(&fields);
        if live.len() > 0 && self.said.readings != Some(readings.hash) {
            self.logged(context, &Event::Read(readings), items_out, items)?;
        }
        let event = Event::Step { cur_iter: step.cur_iter, tokens: step.input_tokens, hint: outcome.hint };
        self.logged(context, &event, items_out, items)?;
        Ok(outcome)
    }

    fn push_item(&mut self, event: &Event<'_>, out: &mut [u8], items: &mut Items) -> Result<(), BufferFull> {
        let start = items.count.checked_sub(1).and_then(|i| items.ends.get(i)).copied().unwrap_or(0);
        let rest = out.get_mut(start..).unwrap_or_default();
        let n = self.write(event, rest)?;
        if let Some(end) = items.ends.get_mut(items.count) {
            *end = start + n;
            items.count += 1;
        }
        Ok(())
    }

    /// Items at the front of the log that the context no longer needs:
    /// those before the item that created the oldest message it holds (all
    /// of them when it holds none).
    pub fn dead_items(&self) -> u32 {
        self.created.front().copied().unwrap_or(self.items)
    }

    /// When the log is full: writes the header to append before popping
    /// [`dead_items`](Self::dead_items) items from the front (call
    /// [`popped`](Self::popped) for each), so that a log cut at any point
    /// of the compaction restores the same context.
    ///
    /// # Errors
    ///
    /// When the item does not fit `out`.
    pub fn compaction_header<const B: usize, const T: usize>(
        &mut self,
        context: &AgentContext<'_, MESSAGES, B, T>,
        out: &mut [u8],
    ) -> Result<usize, BufferFull> {
        let live = self.items - self.dead_items();
        self.write(&Event::Log { header: self.header, live, agent: context.agent_name(), steps: self.steps }, out)
    }

    /// `count` items were popped from the front of the log.
    pub fn popped(&mut self, count: u32) {
        let count = count.min(self.items);
        self.items -= count;
        for position in self.created.iter_mut() {
            *position = position.saturating_sub(count);
        }
    }

    /// The first pass of a restore: reads `item`, the next of the log, for
    /// its number and, if it is a header, its version and configuration.
    ///
    /// # Errors
    ///
    /// A damaged item, a gap, or a header of another version or
    /// configuration.
    pub fn check(&mut self, item: &[u8]) -> Result<(), LogError> {
        let index = self.checked;
        let error = |kind| LogError { index, kind };
        let (n, key, value) = read_item(item).map_err(error)?;
        if index > 0 && n != self.next {
            return Err(error(ItemError::Gap { expected: self.next, found: n }));
        }
        if key.eq_str("log") {
            let (header, live, _) = read_header(value).map_err(error)?;
            if header.version != VERSION {
                return Err(error(ItemError::Version { found: header.version }));
            }
            if header.config != self.header.config {
                return Err(error(ItemError::Config { found: header.config, expected: self.header.config }));
            }
            // Only the last header counts: an earlier one may name items a
            // later compaction popped.
            self.last_header = Some((index, live));
        }
        self.next = n.wrapping_add(1);
        self.checked = index + 1;
        Ok(())
    }

    /// The second pass: applies `item`, the next of the log, to `context`
    /// (empty before the first), if the context still needs it. `scratch`
    /// holds the item's strings that had escapes, decoded. Returns whether
    /// the item was applied.
    ///
    /// # Errors
    ///
    /// A damaged item, or a log that [`check`](Self::check) did not read
    /// whole or found no header in. Start from an empty context then.
    pub fn restore<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        item: &[u8],
        scratch: &mut [u8],
    ) -> Result<bool, LogError> {
        let index = self.items;
        let error = |kind| LogError { index, kind };
        let Some((header, live)) = self.last_header else {
            return Err(LogError { index: self.checked, kind: ItemError::MissingHeader });
        };
        let needed_from = header.checked_sub(live).ok_or(LogError { index: header, kind: ItemError::Field("live") })?;
        if index >= self.checked {
            return Err(error(ItemError::Unchecked));
        }
        let (n, key, value) = read_item(item).map_err(error)?;
        self.items += 1;
        self.next = n.wrapping_add(1);
        if key.eq_str("log") {
            // The steps before it, popped or not, are in its count.
            self.steps = read_header(value).map_err(error)?.2;
        }
        if index < needed_from || key.eq_str("log") {
            self.said = Said::default();
            return Ok(false);
        }
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        let mut scratch = Scratch { rest: scratch };
        let event = read_event(key, value, &self.said, &mut scratch, &mut blocks).map_err(error)?;
        self.apply(context, &event, index).map_err(|e| error(ItemError::Store(e)))?;
        self.said.note(&event);
        self.steps += u64::from(matches!(event, Event::Step { .. }));
        self.restored += 1;
        Ok(true)
    }
}

/// An item on its way out: `{"#": n, "<event>": value}`.
struct ItemOut<'e> {
    n: u32,
    event: &'e Event<'e>,
    said: &'e Said,
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
struct EventOut<'e>(&'e Event<'e>, &'e Said);

impl Serialize for EventOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self.0 {
            Event::Log { header, live, agent, steps } => {
                let mut m = s.serialize_struct("Log", 5)?;
                m.serialize_field("version", &header.version)?;
                m.serialize_field("config", &Hex(header.config))?;
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
                m.serialize_field("content", &Content { msg: &SliceMessage { role, name, blocks }, id: "m" })?;
                m.end()
            }
            Event::Assistant(blocks) => Content { msg: &SliceMessage { role: Role::Assistant, name: "", blocks }, id: "m" }.serialize(s),
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
struct Hex(u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:016x}", self.0))
    }
}

/// Task counts as the trace's list of states.
struct TasksOut(TaskCounts);

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

/// An item's number, event name and value.
fn read_item(item: &[u8]) -> Result<(u32, JsonStr<'_>, Value<'_>), ItemError> {
    let text = core::str::from_utf8(item).map_err(|_| ItemError::NotUtf8)?;
    let value = json::parse(text, MAX_DEPTH).map_err(ItemError::Json)?;
    let mut members = value.members();
    let (Some((hash, n)), Some((key, event)), None) = (members.next(), members.next(), members.next()) else {
        return Err(ItemError::NotAnItem);
    };
    let n = n.number_text().and_then(|t| t.parse().ok()).filter(|_| hash.eq_str("#")).ok_or(ItemError::NotAnItem)?;
    Ok((n, key, event))
}

/// The member `name` of an object.
fn field<'a>(object: Value<'a>, name: &'static str) -> Result<Value<'a>, ItemError> {
    object.members().find(|(key, _)| key.eq_str(name)).map(|(_, value)| value).ok_or(ItemError::Field(name))
}

fn number<N: core::str::FromStr>(object: Value<'_>, name: &'static str) -> Result<N, ItemError> {
    field(object, name)?.number_text().and_then(|t| t.parse().ok()).ok_or(ItemError::Field(name))
}

/// The number `name`, or what the log last said when it is left out.
fn number_or<N: core::str::FromStr + Default>(object: Value<'_>, name: &'static str, said: Option<N>) -> Result<N, ItemError> {
    match field(object, name) {
        Ok(_) => number(object, name),
        Err(_) => Ok(said.unwrap_or_default()),
    }
}

/// `2026-07-22T02:30:00Z` or `2026-07-22T02:30:00.250000Z`, as
/// [`Rfc3339`](crate::wire::Rfc3339) writes it: years 1 to 9999, as
/// strftime's `%Y` writes them (no leading zeros).
fn read_rfc3339(text: &str) -> Option<Timestamp> {
    let (date_time, micros) = match text.strip_suffix('Z')?.split_once('.') {
        Some((dt, f)) if f.len() == 6 => (dt, digits(f)?),
        Some(_) => return None,
        None => (text.strip_suffix('Z')?, 0),
    };
    let (date, time) = date_time.split_once('T')?;
    let (year, month_day) = date.split_once('-')?;
    let two = |pair: &str, sep: char| -> Option<(u32, u32)> {
        let (a, b) = pair.split_once(sep).filter(|(a, b)| a.len() == 2 && b.len() == 2)?;
        Some((u32::try_from(digits(a)?).ok()?, u32::try_from(digits(b)?).ok()?))
    };
    let (month, day) = two(month_day, '-')?;
    let (hour, minute_second) = time.split_once(':').filter(|(h, _)| h.len() == 2)?;
    let (minute, second) = two(minute_second, ':')?;
    let year = i32::try_from(digits(year).filter(|_| (1..=4).contains(&year.len()))?).ok()?;
    let at = chrono::NaiveDate::from_ymd_opt(year, month, day)?.and_hms_micro_opt(
        u32::try_from(digits(hour)?).ok()?,
        minute,
        second,
        u32::try_from(micros).ok()?,
    )?;
    Some(Timestamp(at.and_utc().timestamp_micros()))
}

/// A run of ASCII digits (no sign, unlike `str::parse`).
fn digits(text: &str) -> Option<i64> {
    text.bytes().try_fold(0i64, |n, b| if b.is_ascii_digit() { n.checked_mul(10)?.checked_add(i64::from(b - b'0')) } else { None })
}

/// A header's version and configuration, its `live` items and `steps`.
fn read_header(value: Value<'_>) -> Result<(Header, u32, u64), ItemError> {
    let config = field(value, "config")?.as_str().and_then(|s| u64::from_str_radix(s.raw(), 16).ok());
    let header = Header { version: number(value, "version")?, config: config.ok_or(ItemError::Field("config"))? };
    Ok((header, number(value, "live")?, number_or(value, "steps", None)?))
}

/// Where an item's strings with escapes are decoded.
struct Scratch<'a> {
    rest: &'a mut [u8],
}

impl<'a> Scratch<'a> {
    /// The decoded `name` field of `object`.
    fn text(&mut self, object: Value<'a>, name: &'static str) -> Result<&'a str, ItemError> {
        let text = field(object, name)?.as_str().ok_or(ItemError::Field(name))?;
        if !text.raw().contains('\\') {
            return Ok(text.raw());
        }
        self.decode(core::iter::once(text)).map(Option::unwrap_or_default)
    }

    /// `parts` decoded one after the other (`None` if there is none).
    fn decode(&mut self, mut parts: impl Iterator<Item = JsonStr<'a>>) -> Result<Option<&'a str>, ItemError> {
        let Some(first) = parts.next() else { return Ok(None) };
        let rest = core::mem::take(&mut self.rest);
        let mut cursor = Cursor { buf: rest, len: 0 };
        for part in core::iter::once(first).chain(parts) {
            part.write_to(&mut cursor).map_err(|_| ItemError::ScratchFull)?;
        }
        let Cursor { buf, len } = cursor;
        let (done, rest) = buf.split_at_mut_checked(len).ok_or(ItemError::ScratchFull)?;
        self.rest = rest;
        core::str::from_utf8(done).map(Some).map_err(|_| ItemError::NotUtf8)
    }
}

struct Cursor<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl fmt::Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        // Equal lengths; a zip keeps the copy free of a length check.
        dst.iter_mut().zip(s.bytes()).for_each(|(d, b)| *d = b);
        self.len = end;
        Ok(())
    }
}

/// The event named `key` with the value `value`; strings are decoded into
/// `scratch`, blocks into `blocks`.
fn read_event<'a: 'b, 'b>(
    key: JsonStr<'a>,
    value: Value<'a>,
    said: &Said,
    scratch: &mut Scratch<'a>,
    blocks: &'b mut [Block<'a>; MAX_EVENT_BLOCKS],
) -> Result<Event<'b>, ItemError> {
    let name = |scratch: &mut Scratch<'a>| scratch.text(value, "name");
    Ok(match key.raw() {
        "config" => Event::Config { agent_name: scratch.text(value, "agent_name")?, context_size: number(value, "context_size")? },
        "set_clock" => match value.kind() {
            Kind::Null => Event::SetClock(None),
            _ => Event::SetClock(Some(value.as_str().and_then(|t| read_rfc3339(t.raw())).ok_or(ItemError::Field("set_clock"))?)),
        },
        "advance" => {
            let micros = match value.kind() {
                Kind::Number => value.number_text().and_then(|t| t.parse::<i64>().ok()).and_then(|s| s.checked_mul(1_000_000)),
                _ => value.as_str().and_then(|t| t.raw().strip_suffix("us")?.parse().ok()),
            };
            let micros = micros.ok_or(ItemError::Field("advance"))?;
            // A compacted log's first live items may advance from a clock
            // set in an item popped since: the time is unknown there.
            Event::SetClock(said.clock.flatten().and_then(|then| Some(Timestamp(then.unix_micros().checked_add(micros)?))))
        }
        "tasks" => Event::Tasks(read_tasks(value)?),
        "user" => Event::User { name: name(scratch)? },
        "message" => {
            let role = field(value, "role")?.as_str().and_then(|r| Role::from_name(r.raw())).ok_or(ItemError::Field("role"))?;
            let name = name(scratch)?;
            Event::Message { role, name, blocks: read_blocks(field(value, "content")?, scratch, blocks)? }
        }
        "assistant" => Event::Assistant(read_blocks(value, scratch, blocks)?),
        "tool_call" => Event::ToolCall { id: scratch.text(value, "id")?, name: name(scratch)?, input: scratch.text(value, "input")? },
        "tool_result" => {
            let state = field(value, "state")?.as_str().and_then(|s| ToolResultState::from_name(s.raw()));
            Event::ToolResult { id: scratch.text(value, "id")?, name: name(scratch)?, state: state.ok_or(ItemError::Field("state"))? }
        }
        "reply" => Event::Reply,
        "compress" => Event::Compress { keep: value.number_text().and_then(|t| t.parse().ok()).ok_or(ItemError::Field("compress"))? },
        "read" => Event::Read(Readings::read(value)?),
        "step" => {
            let hint = match field(value, "hint")?.kind() {
                Kind::Null => None,
                _ => Some(scratch.text(value, "hint")?),
            };
            let cur_iter = number_or(value, "cur_iter", said.iter)?;
            Event::Step { cur_iter, tokens: number_or(value, "tokens", said.tokens)?, hint }
        }
        _ => return Err(ItemError::UnknownEvent),
    })
}

fn read_tasks(value: Value<'_>) -> Result<TaskCounts, ItemError> {
    let mut counts = TaskCounts::default();
    for state in value.items() {
        match state.as_str().map(|s| s.raw()) {
            Some("pending") => counts.pending += 1,
            Some("in_progress") => counts.in_progress += 1,
            _ => return Err(ItemError::Field("tasks")),
        }
    }
    Ok(counts)
}

/// A `content` list, as [`Content`] writes it: a list hint is read back as
/// its parts joined, which is what the store keeps.
fn read_blocks<'a: 'b, 'b>(
    list: Value<'a>,
    scratch: &mut Scratch<'a>,
    blocks: &'b mut [Block<'a>; MAX_EVENT_BLOCKS],
) -> Result<&'b [Block<'a>], ItemError> {
    if list.kind() != Kind::Array {
        return Err(ItemError::Field("content"));
    }
    let mut count = 0;
    for block in list.items() {
        let slot = blocks.get_mut(count).ok_or(ItemError::TooManyBlocks)?;
        *slot = read_block(block, scratch)?;
        count += 1;
    }
    Ok(blocks.get(..count).unwrap_or_default())
}

fn read_block<'a>(block: Value<'a>, scratch: &mut Scratch<'a>) -> Result<Block<'a>, ItemError> {
    let kind = field(block, "type")?.as_str().ok_or(ItemError::Field("type"))?;
    Ok(match kind.raw() {
        "text" => Block::Other,
        "tool_call" => {
            Block::ToolCall { id: scratch.text(block, "id")?, name: scratch.text(block, "name")?, input: scratch.text(block, "input")? }
        }
        "tool_result" => {
            let state = field(block, "state")?.as_str().and_then(|s| ToolResultState::from_name(s.raw()));
            Block::ToolResult {
                id: scratch.text(block, "id")?,
                name: scratch.text(block, "name")?,
                state: state.ok_or(ItemError::Field("state"))?,
            }
        }
        "hint" => {
            let source = match field(block, "source")?.kind() {
                Kind::Null => None,
                _ => Some(scratch.text(block, "source")?),
            };
            let hint = field(block, "hint")?;
            let text = match hint.kind() {
                Kind::String => scratch.text(block, "hint")?,
                Kind::Array => {
                    let parts = hint.items().map(|part| field(part, "text").ok().and_then(|t| t.as_str()));
                    if parts.clone().any(|p| p.is_none()) {
                        return Err(ItemError::Field("hint"));
                    }
                    scratch.decode(parts.flatten())?.unwrap_or("")
                }
                _ => return Err(ItemError::Field("hint")),
            };
            Block::Hint { source, text: HintText::Single(text) }
        }
        _ => return Err(ItemError::Field("type")),
    })
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::{Config, ContextConfig, Engine};
    use std::format;
    use std::string::{String, ToString};
    use std::vec::Vec;

    const AGENT: &str = "rover";
    type Context<'a> = AgentContext<'a, 6, 24, 1024>;

    fn engine() -> Engine<'static> {
        let mut config = Config::default();
        config.context.compression_tool_enabled = true;
        Engine::new(config).unwrap()
    }

    fn step(cur_iter: u64, pending: u64, tokens: i64) -> StepInput {
        StepInput { tasks: TaskCounts { pending, in_progress: 0 }, cur_iter, input_tokens: tokens, context_size: 8192 }
    }

    /// What a session does: an event, or a step `minutes` after the start.
    enum Op {
        Ev(Event<'static>),
        Step { minutes: i64, cur_iter: u64, pending: u64, tokens: i64 },
    }

    const START: i64 = 1_784_687_400;

    /// Every kind of event, strings with escapes, a list hint, evictions
    /// (6 messages) and a compression.
    fn session() -> Vec<Op> {
        static PARTS: [&str; 2] = ["<current-time>2026-01-01 00:00:00", "</current-time>"];
        static OBSERVED: [Block<'static>; 3] = [
            Block::Hint { source: Some("runtime"), text: HintText::Parts(&PARTS) },
            Block::Other,
            Block::ToolCall { id: "s1", name: "TaskList", input: "{}" },
        ];
        static OWN: [Block<'static>; 2] = [Block::Other, Block::ToolResult { id: "x", name: "Drive", state: ToolResultState::Denied }];
        let call = |id, input| Op::Ev(Event::ToolCall { id, name: "Drive", input });
        let result = |id, state| Op::Ev(Event::ToolResult { id, name: "Drive", state });
        let mut ops = Vec::from([
            Op::Ev(Event::User { name: "operator \"ops\"" }),
            Op::Step { minutes: 0, cur_iter: 0, pending: 2, tokens: 900 },
            call("c1", "{\"metres\": 2,\n \"note\": \"é😀\\\\\"}"),
            result("c1", ToolResultState::Error),
            call("c2", "{\"metres\":2}"),
            result("c2", ToolResultState::Error),
            call("c3", " {\"metres\": 2}"),
            result("c3", ToolResultState::Error),
            Op::Step { minutes: 1, cur_iter: 1, pending: 2, tokens: 7000 },
            Op::Ev(Event::Message { role: Role::System, name: "sys", blocks: &OBSERVED }),
            Op::Ev(Event::Assistant(&OWN)),
            Op::Ev(Event::Reply),
            result("c3", ToolResultState::Running),
            Op::Step { minutes: 40, cur_iter: 0, pending: 1, tokens: 7000 },
        ]);
        for i in 0..6 {
            ops.push(Op::Ev(Event::User { name: "operator" }));
            ops.push(Op::Step { minutes: 41 + i, cur_iter: 0, pending: 1, tokens: 100 });
            ops.push(call("c4", "{}"));
        }
        ops.push(Op::Ev(Event::Compress { keep: 2 }));
        ops.push(Op::Step { minutes: 80, cur_iter: 1, pending: 0, tokens: 100 });
        ops
    }

    fn now(minutes: i64) -> Option<Timestamp> {
        Some(Timestamp::from_unix_seconds(START + 60 * minutes))
    }

    /// Runs `ops` live through a journal, returning the items written and
    /// each step's hint.
    fn run_live(context: &mut Context<'_>, journal: &mut Journal<6>, ops: &[Op], log: &mut Vec<Vec<u8>>) -> Vec<Option<String>> {
        let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
        let mut hints = Vec::new();
        for op in ops {
            match op {
                Op::Ev(event) => {
                    let items = journal.record(context, event, &mut buf).unwrap();
                    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
                }
                Op::Step { minutes, cur_iter, pending, tokens } => {
                    let step = step(*cur_iter, *pending, *tokens);
                    let (outcome, items) = journal.step(context, &step, now(*minutes), &mut (), &mut hint, &mut buf).unwrap();
                    hints.push(outcome.hint.map(str::to_string));
                    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
                }
            }
        }
        hints
    }

    fn restore<'e>(engine: &Engine<'e>, log: &[Vec<u8>]) -> Result<(Context<'e>, Journal<6>), LogError> {
        let mut context = Context::new(engine, AGENT);
        let mut journal = Journal::new(&context);
        let mut scratch = [0u8; 2048];
        for item in log {
            journal.check(item)?;
        }
        for item in log {
            journal.restore(&mut context, item, &mut scratch)?;
        }
        Ok((context, journal))
    }

    fn started(context: &Context<'_>) -> (Journal<6>, Vec<Vec<u8>>) {
        let mut journal = Journal::new(context);
        let mut buf = [0u8; 128];
        let n = journal.start(context, &mut buf).unwrap();
        (journal, Vec::from([buf[..n].to_vec()]))
    }

    /// The whole state, once both contexts have made the same decision
    /// (which sets `messages_read`).
    fn state(context: &mut Context<'_>) -> String {
        context.decide(&step(2, 1, 100), now(500));
        format!("{context:?}")
    }

    #[test]
    fn a_restored_context_is_the_context_before_the_reset_at_every_item() {
        let engine = engine();
        let ops = session();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        run_live(&mut live, &mut journal, &ops, &mut log);
        assert!(live.store().evicted_total() > 0, "the session evicts");
        // Every prefix of the log: the context the same events build live.
        for cut in 1..=log.len() {
            let (mut restored, journal) = restore(&engine, &log[..cut]).unwrap();
            assert_eq!(journal.restored_events() as usize, cut - 1);
            let mut again = Context::new(&engine, AGENT);
            let (mut j, _) = started(&again);
            for item in &log[1..cut] {
                let mut scratch = [0u8; 2048];
                let (_, key, value) = read_item(item).unwrap();
                let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
                let said = j.said;
                let event = read_event(key, value, &said, &mut Scratch { rest: &mut scratch }, &mut blocks).unwrap();
                let mut buf = [0u8; 2048];
                j.record(&mut again, &event, &mut buf).unwrap();
            }
            assert_eq!(state(&mut restored), state(&mut again), "after {cut} items");
        }
        let (mut restored, _) = restore(&engine, &log).unwrap();
        assert_eq!(state(&mut restored), state(&mut live));
    }

    #[test]
    fn decisions_after_a_restore_are_those_of_the_uninterrupted_session() {
        let engine = engine();
        let ops = session();
        for split in [1, 2, 9, 14, 20, ops.len() - 1] {
            let mut live = Context::new(&engine, AGENT);
            let (mut journal, mut log) = started(&live);
            run_live(&mut live, &mut journal, &ops[..split], &mut log);
            let (mut restored, mut journal) = restore(&engine, &log).unwrap();
            let steps = ops[..split].iter().filter(|op| matches!(op, Op::Step { .. })).count() as u64;
            assert_eq!(journal.steps(), steps, "split at {split}");
            let mut uninterrupted = Context::new(&engine, AGENT);
            let (mut j, mut l) = started(&uninterrupted);
            let before = run_live(&mut uninterrupted, &mut j, &ops[..split], &mut l);
            let after = run_live(&mut uninterrupted, &mut j, &ops[split..], &mut l);
            assert_eq!(run_live(&mut restored, &mut journal, &ops[split..], &mut log), after, "split at {split}");
            assert!(before.iter().chain(&after).filter(|h| h.is_some()).count() >= 4);
            assert_eq!(state(&mut restored), state(&mut uninterrupted));
            // The restore read the clock back, so the log goes on with the
            // items an uninterrupted device writes (an `advance`, not a new
            // `set_clock`).
            assert_eq!(log, l, "split at {split}");
            assert_eq!(journal.clock(), j.clock());
        }
    }

    /// The split step (`decide`, then `render_step`) writes the items and
    /// makes the hints `step` does, and leaves the same context.
    #[test]
    fn the_split_step_logs_what_the_whole_step_logs() {
        let engine = engine();
        let ops = session();
        let (mut whole, mut split) = (Context::new(&engine, AGENT), Context::new(&engine, AGENT));
        let (mut whole_journal, mut whole_log) = started(&whole);
        let whole_hints = run_live(&mut whole, &mut whole_journal, &ops, &mut whole_log);
        let (mut journal, mut log) = started(&split);
        let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
        let mut hints = Vec::new();
        for op in &ops {
            match op {
                Op::Ev(event) => {
                    let items = journal.record(&mut split, event, &mut buf).unwrap();
                    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
                }
                Op::Step { minutes, cur_iter, pending, tokens } => {
                    let step = step(*cur_iter, *pending, *tokens);
                    let (decision, items) = journal.decide(&mut split, &step, now(*minutes), &(), &mut buf).unwrap();
                    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
                    let (outcome, items) = journal.render_step(&mut split, decision, &step, &mut (), &mut hint, &mut buf).unwrap();
                    hints.push(outcome.hint.map(str::to_string));
                    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
                }
            }
        }
        assert_eq!(hints, whole_hints);
        assert_eq!(log, whole_log);
        assert_eq!(state(&mut split), state(&mut whole));
        // Items that do not fit: nothing counted, the next step logs as before.
        let step = step(0, 3, 100);
        assert!(journal.decide(&mut split, &step, now(90), &(), &mut [0u8; 4]).is_err());
        let (decision, items) = journal.decide(&mut split, &step, now(90), &(), &mut buf).unwrap();
        let first = core::str::from_utf8(items.iter(&buf).next().unwrap()).unwrap().to_string();
        assert!(first.starts_with(&format!("{{\"#\":{},", log.len())), "{first}");
        assert!(journal.render_step(&mut split, decision, &step, &mut (), &mut hint, &mut [0u8; 4]).is_err());
        assert_eq!(journal.items() as usize, log.len() + items.len());
    }

    #[test]
    fn items_are_the_replay_trace_format() {
        let engine = engine();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        run_live(&mut live, &mut journal, &session()[..9], &mut log);
        let text: Vec<&str> = log.iter().map(|i| core::str::from_utf8(i).unwrap()).collect();
        let header =
            format!("{{\"#\":0,\"log\":{{\"version\":1,\"config\":\"{:016x}\",\"live\":0,\"agent\":\"rover\"}}}}", journal.header().config);
        assert_eq!(text[0], header);
        assert_eq!(text[1], r##"{"#":1,"user":{"name":"operator \"ops\"","content":""}}"##);
        assert_eq!(text[2], r##"{"#":2,"config":{"agent_name":"rover","context_size":8192}}"##);
        assert_eq!(text[3], r##"{"#":3,"tasks":["pending","pending"]}"##);
        assert_eq!(text[4], r##"{"#":4,"set_clock":"2026-07-22T02:30:00Z"}"##);
        // `cur_iter` is left out where the replay's default (0 after a user
        // message, the last step's plus one) is right.
        assert!(text[5].starts_with(r##"{"#":5,"step":{"tokens":900,"hint":"<system-reminder>"##), "{}", text[5]);
        assert_eq!(text[6], r##"{"#":6,"tool_call":{"id":"c1","name":"Drive","input":"{\"metres\": 2,\n \"note\": \"é😀\\\\\"}"}}"##);
        assert_eq!(text[7], r##"{"#":7,"tool_result":{"id":"c1","name":"Drive","state":"error"}}"##);
        // A minute later: the clock advances, configuration and tasks are
        // as they were.
        assert_eq!(text[12], r##"{"#":12,"advance":60}"##);
        assert_eq!(text[13], r##"{"#":13,"step":{"tokens":7000,"hint":null}}"##);
        assert_eq!(text.len(), 14);
    }

    #[test]
    fn the_clock_is_read_back_as_the_wire_writes_it() {
        for micros in [0, 1, 250_000, 1_784_687_400_000_000, 1_784_687_400_123_456, -62_135_596_800_000_000, 253_402_300_799_999_999] {
            let text = Rfc3339(Timestamp(micros)).to_string();
            assert_eq!(read_rfc3339(&text), Some(Timestamp(micros)), "{text}");
        }
        for bad in [
            "",
            "Z",
            "2026-07-22T02:30:00",
            "2026-07-22 02:30:00Z",
            "2026-07-22T02:30:00.25Z",
            "2026-02-30T02:30:00Z",
            "+026-07-22T02:30:00Z",
            "12026-07-22T02:30:00Z",
            "2026-7-22T02:30:00Z",
            "2026-07-22T2:30:00Z",
            "2026-07-22T24:00:00Z",
        ] {
            assert_eq!(read_rfc3339(bad), None, "{bad}");
        }
        // A restore follows the clock through `set_clock` and `advance`.
        let engine = engine();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        run_live(&mut live, &mut journal, &session(), &mut log);
        let (_, restored) = restore(&engine, &log).unwrap();
        assert!(restored.clock().is_some());
        assert_eq!(restored.clock(), journal.clock());
        // A step whose clock is unknown writes `set_clock: null`, which a
        // restore reads back as unknown.
        let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
        let (_, items) = journal.step(&mut live, &step(0, 1, 100), None, &mut (), &mut hint, &mut buf).unwrap();
        log.extend(items.iter(&buf).map(<[u8]>::to_vec));
        assert!(log.iter().any(|i| i.ends_with(b"\"set_clock\":null}")));
        let (_, restored) = restore(&engine, &log).unwrap();
        assert_eq!(restored.clock(), None);
        // An `advance` with no clock before it: the time is unknown.
        let mut said = Said::default();
        let value = json::parse("60", 4).unwrap();
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        let event = read_event(JsonStr::from_validated("advance"), value, &said, &mut Scratch { rest: &mut [] }, &mut blocks).unwrap();
        assert!(matches!(event, Event::SetClock(None)));
        said.clock = Some(Some(Timestamp(5)));
        let value = json::parse("\"7us\"", 4).unwrap();
        let event = read_event(JsonStr::from_validated("advance"), value, &said, &mut Scratch { rest: &mut [] }, &mut blocks).unwrap();
        assert!(matches!(event, Event::SetClock(Some(Timestamp(12)))));
    }

    /// One live field, as a device's sensor.
    struct Thermometer(String);

    impl LiveFields for Thermometer {
        fn len(&self) -> usize {
            1
        }
        fn field(&self, i: usize) -> Option<(&str, &str)> {
            (i == 0).then_some(("temperature", self.0.as_str()))
        }
    }

    /// Steps a minute apart at these temperatures, through `journal`.
    fn steps_at(context: &mut Context<'_>, journal: &mut Journal<6>, from: i64, temperatures: &[&str], log: &mut Vec<Vec<u8>>) {
        let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
        for (i, t) in temperatures.iter().enumerate() {
            let minutes = from + i as i64;
            let mut live = Thermometer(t.to_string());
            let (_, items) = journal.step(context, &step(minutes as u64, 1, 100), now(minutes), &mut live, &mut hint, &mut buf).unwrap();
            log.extend(items.iter(&buf).map(<[u8]>::to_vec));
        }
    }

    #[test]
    fn live_values_are_logged_where_they_changed_and_survive_a_restore() {
        let engine = engine();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        live.user("operator").unwrap();
        steps_at(&mut live, &mut journal, 0, &["21.5 °C", "21.5 °C", "22 \"C\"", "22 \"C\""], &mut log);
        let text: Vec<String> = log.iter().map(|i| String::from_utf8(i.clone()).unwrap()).collect();
        let reads: Vec<&String> = text.iter().filter(|t| t.contains("\"read\":")).collect();
        assert_eq!(reads.len(), 2, "{text:#?}");
        assert!(reads[0].ends_with(r#""read":{"temperature":"21.5 °C"}}"#), "{}", reads[0]);
        assert!(reads[1].ends_with(r#""read":{"temperature":"22 \"C\""}}"#), "{}", reads[1]);
        // Each `read` is the item just before its step's.
        for (i, _) in text.iter().enumerate().filter(|(_, t)| t.contains("\"read\":")) {
            assert!(text[i + 1].contains("\"step\":"), "{}", text[i + 1]);
        }
        // A restore knows what the log said last: the same temperature is
        // not written again, a new one is, as without the reset.
        let (mut restored, mut restored_journal) = restore(&engine, &log).unwrap();
        let mut continued = log.clone();
        steps_at(&mut restored, &mut restored_journal, 4, &["22 \"C\"", "23 °C"], &mut continued);
        steps_at(&mut live, &mut journal, 4, &["22 \"C\"", "23 °C"], &mut log);
        assert_eq!(continued, log);
        assert_eq!(log.iter().filter(|i| i.windows(7).any(|w| w == b"\"read\":")).count(), 3);
        // A `read` that is not an object of texts is refused, naming it.
        let index = text.iter().position(|t| t.contains("\"read\":")).unwrap();
        for bad in ["5", r#"{"temperature":5}"#] {
            let mut damaged = log.clone();
            damaged[index] = format!("{{\"#\":{index},\"read\":{bad}}}").into_bytes();
            let e = error_of(&damaged);
            assert_eq!((e.index as usize, e.kind), (index, ItemError::Field("read")), "{bad}");
        }
    }

    /// Two live fields, as the firmware's temperature and uptime.
    struct TwoFields(&'static str, &'static str);

    impl LiveFields for TwoFields {
        fn len(&self) -> usize {
            2
        }
        fn field(&self, i: usize) -> Option<(&str, &str)> {
            [("temperature", self.0), ("uptime", self.1)].get(i).copied()
        }
    }

    #[test]
    fn a_read_item_holds_every_field_and_null_reads_back_as_unavailable() {
        let engine = engine();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        live.user("operator").unwrap();
        let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
        let mut fields = TwoFields("21.5 °C", "7.818 s");
        let (_, items) = journal.step(&mut live, &step(0, 1, 100), now(0), &mut fields, &mut hint, &mut buf).unwrap();
        log.extend(items.iter(&buf).map(<[u8]>::to_vec));
        let read = log.iter().map(|i| String::from_utf8(i.clone()).unwrap()).find(|t| t.contains("\"read\":")).unwrap();
        assert!(read.ends_with(r#""read":{"temperature":"21.5 °C","uptime":"7.818 s"}}"#), "{read}");
        let readings = Readings::of(&fields);
        assert_eq!(format!("{readings:?}"), format!("Readings {{ hash: {}, .. }}", readings.hash));
        // `null` is read back as `unavailable`: the same hash.
        let null = json::parse(r#"{"temperature":null}"#, 4).unwrap();
        let text = json::parse(r#"{"temperature":"unavailable"}"#, 4).unwrap();
        assert_eq!(Readings::read(null).unwrap().hash, Readings::read(text).unwrap().hash);
        assert_ne!(
            Readings::read(null).unwrap().hash,
            Readings::read(json::parse(r#"{"temperature":"21.5 °C"}"#, 4).unwrap()).unwrap().hash
        );
    }

    fn error_of(log: &[Vec<u8>]) -> LogError {
        restore(&engine(), log).expect_err("the log is refused")
    }

    #[test]
    fn a_damaged_log_is_a_typed_error_naming_the_item() {
        let engine = engine();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        run_live(&mut live, &mut journal, &session(), &mut log);
        // A flipped byte: in the JSON's structure, in a field name, in a state.
        let mut flipped = log.clone();
        flipped[6][0] ^= 0x01;
        let e = error_of(&flipped);
        assert_eq!((e.index, e.kind), (6, ItemError::Json(JsonError { kind: json::JsonErrorKind::ExpectedValue, offset: 0 })));
        assert_eq!(e.to_string(), "log item 6: not JSON: expecting value at byte 0");
        let mut flipped = log.clone();
        let at = flipped[7].windows(5).position(|w| w == b"error").unwrap();
        flipped[7][at] = b'f';
        assert_eq!(error_of(&flipped), LogError { index: 7, kind: ItemError::Field("state") });
        let mut flipped = log.clone();
        flipped[8][2] = 0xff;
        assert_eq!(error_of(&flipped), LogError { index: 8, kind: ItemError::NotUtf8 });
        // A truncated item.
        let mut truncated = log.clone();
        let len = truncated[9].len();
        truncated[9].truncate(len - 3);
        let e = error_of(&truncated);
        assert_eq!(e.index, 9);
        assert!(matches!(e.kind, ItemError::Json(_)), "{e}");
        // A lost item: the numbers have a gap.
        let mut lost = log.clone();
        lost.remove(5);
        assert_eq!(error_of(&lost), LogError { index: 5, kind: ItemError::Gap { expected: 5, found: 6 } });
        assert_eq!(error_of(&lost).to_string(), "log item 5: item number 6, expected 5: an item was lost");
        // No header.
        let headless = &log[1..];
        assert_eq!(error_of(headless), LogError { index: headless.len() as u32, kind: ItemError::MissingHeader });
        // Another event, another shape.
        let mut odd = log.clone();
        odd[3] = br##"{"#":3,"shout":1}"##.to_vec();
        assert_eq!(error_of(&odd), LogError { index: 3, kind: ItemError::UnknownEvent });
        odd[3] = br##"{"#":3,"tasks":[],"step":{}}"##.to_vec();
        assert_eq!(error_of(&odd), LogError { index: 3, kind: ItemError::NotAnItem });
        assert_eq!(error_of(&odd).to_string(), "log item 3: not an object of an item number \"#\" and one event");
    }

    #[test]
    fn a_log_of_another_configuration_or_version_is_refused_before_anything_is_applied() {
        let engine = engine();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        run_live(&mut live, &mut journal, &session(), &mut log);
        let expected = journal.header().config;
        // Another configuration, another agent, another capacity.
        let mut config = Config::default();
        config.context = ContextConfig { trigger_ratio: 0.7, ..config.context };
        let other = Engine::new(config).unwrap();
        let others = [
            Header::of(&Context::new(&other, AGENT)).config,
            Header::of(&Context::new(&engine, "scout")).config,
            Header::of(&AgentContext::<'_, 6, 24, 1000>::new(&engine, AGENT)).config,
        ];
        for found in others {
            assert_ne!(found, expected);
            let mut foreign = log.clone();
            foreign[0] =
                format!("{{\"#\":0,\"log\":{{\"version\":1,\"config\":\"{found:016x}\",\"live\":0,\"agent\":\"rover\"}}}}").into_bytes();
            let e = error_of(&foreign);
            assert_eq!(e, LogError { index: 0, kind: ItemError::Config { found, expected } });
            assert_eq!(e.to_string(), format!("log item 0: written for configuration {found:016x}, this context is {expected:016x}"));
        }
        let mut newer = log.clone();
        newer[0] =
            format!("{{\"#\":0,\"log\":{{\"version\":2,\"config\":\"{expected:016x}\",\"live\":0,\"agent\":\"rover\"}}}}").into_bytes();
        assert_eq!(error_of(&newer), LogError { index: 0, kind: ItemError::Version { found: 2 } });
        assert_eq!(error_of(&newer).to_string(), "log item 0: log format version 2, this build reads 1");
        // Restoring without the check pass is refused too.
        let mut context = Context::new(&engine, AGENT);
        let mut fresh = Journal::new(&context);
        let e = fresh.restore(&mut context, &log[0], &mut [0u8; 16]).unwrap_err();
        assert_eq!(e, LogError { index: 0, kind: ItemError::MissingHeader });
        assert!(context.is_empty());
    }

    #[test]
    fn recording_errors_leave_the_context_and_the_log_unchanged() {
        let engine = engine();
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, _) = started(&live);
        let before = (state(&mut live), journal.items());
        let e = journal.record(&mut live, &Event::User { name: "operator" }, &mut [0u8; 8]).unwrap_err();
        assert_eq!(e, RecordError::BufferFull(BufferFull { capacity: 8 }));
        let long = "x".repeat(2000);
        let e = journal.record(&mut live, &Event::User { name: &long }, &mut [0u8; 4096]).unwrap_err();
        assert_eq!(e, RecordError::Step(StepError::Store(StoreError::TooMuchText { needed: 2000, capacity: 1024 })));
        let e = journal.step(&mut live, &step(0, 1, 0), now(0), &mut (), &mut [0u8; 8], &mut [0u8; 1024]).unwrap_err();
        assert!(matches!(e, RecordError::Step(StepError::HintTooLong(_))), "{e}");
        let header = Event::Log { header: journal.header(), live: 0, agent: AGENT, steps: 0 };
        assert_eq!(journal.record(&mut live, &header, &mut [0u8; 128]).unwrap_err(), RecordError::NotRecordable);
        assert_eq!((state(&mut live), journal.items()), before);
        // The next item follows the last one written.
        let mut buf = [0u8; 128];
        let items = journal.record(&mut live, &Event::Reply, &mut buf).unwrap();
        assert_eq!(items.iter(&buf).collect::<Vec<_>>(), [br##"{"#":1,"reply":null}"##]);
    }

    /// The log is compacted to the items that created the messages the
    /// context holds, and on: a cut at any point of the compaction restores
    /// the same context, which decides as the uninterrupted one.
    #[test]
    fn compaction_keeps_what_the_context_holds_at_every_cut() {
        let engine = engine();
        let ops = session();
        for split in [3, 14, 23, ops.len() - 3] {
            let mut live = Context::new(&engine, AGENT);
            let (mut journal, mut log) = started(&live);
            run_live(&mut live, &mut journal, &ops[..split], &mut log);
            let dead = journal.dead_items() as usize;
            assert!(dead >= 1 && dead < log.len());
            let mut buf = [0u8; 128];
            let n = journal.compaction_header(&live, &mut buf).unwrap();
            log.push(buf[..n].to_vec());
            let mut uninterrupted = Context::new(&engine, AGENT);
            let (mut j, mut l) = started(&uninterrupted);
            run_live(&mut uninterrupted, &mut j, &ops[..split], &mut l);
            let after = run_live(&mut uninterrupted.clone(), &mut j.clone(), &ops[split..], &mut l.clone());
            for popped in 0..=dead {
                let (mut restored, mut rj) = restore(&engine, &log[popped..]).unwrap();
                assert_eq!(restored.store().len(), live.store().len(), "split {split}, popped {popped}");
                // However many items were popped, the session's steps are known.
                let steps = ops[..split].iter().filter(|op| matches!(op, Op::Step { .. })).count() as u64;
                assert_eq!((rj.steps(), journal.steps()), (steps, steps), "split {split}, popped {popped}");
                assert!(rj.steps() >= 1);
                for i in 0..live.len() {
                    assert_eq!(format!("{:?}", restored.newest(i)), format!("{:?}", live.newest(i)));
                }
                let mut rest = log[popped..].to_vec();
                assert_eq!(run_live(&mut restored, &mut rj, &ops[split..], &mut rest), after, "split {split}, popped {popped}");
            }
            journal.popped(dead as u32);
            assert_eq!(journal.dead_items(), 0);
            assert_eq!(journal.items() as usize, log.len() - dead);
        }
    }
}
