//! The session as an append-only log, read back after a reset (feature
//! `journal`; see `docs/reboot.md`).
//!
//! A [`Session`] owns an [`AgentContext`] and its log: each event is
//! logged to an [`ItemStore`] before it is applied, and there is no other
//! way to change the context; [`Session::restore`] (or [`Restore`], item by
//! item) rebuilds it after a reset, with where the reply stood
//! ([`Session::reply`]). Start there; the rest of this page is the
//! [`Journal`] under it, for those who build their own owner.
//!
//! Every change of an [`AgentContext`] goes through a [`Journal`], which
//! writes it as one item (a few bytes: docs/reboot.md, "The items") into a
//! caller's buffer; the caller appends the item to its store
//! (sequential-storage's queue on a device). After a reset the items are
//! read back, in order, into an empty context: each is applied by the same
//! code that applied it live ([`Journal::record`]), so the context and its
//! tracker decide as before the reset.
//!
//! Items: a kind byte, the low 16 bits of the item's number (a gap means an
//! item was lost), then the event's fields: the header (version,
//! configuration hash and the configuration itself, how many items before
//! it are still needed), `user`, `message`, `assistant`, `tool_call`,
//! `tool_result`, `reply`, `compress`, and `step`. A step item holds the
//! step's inputs where they changed, the watched values, what the decision
//! fired and the live values it told, not the hint's text: restoring
//! renders the hint again from these, byte for byte, and never decides
//! again ([`StepRecord`]). [`decode`] reads one item on its own (the
//! desktop's replay turns them into its trace lines).
//!
//! Restoring is two passes over the log: [`Journal::check`] reads every
//! item's number and every header (a log of another version or
//! configuration is refused before anything is applied), then
//! [`Journal::restore`] applies the items the context still needs. Any error
//! names the item; the caller then starts from an empty context. The check
//! pass reads each item's number with an [`ItemReader`], which a reader that
//! does not restore (the desktop's `replay --flash`) runs alone.
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
//! let items = journal.record(&mut live, &Event::User { name: "operator", text: "" }, &mut buf)?;
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
//! assert_eq!(journal.restored_events(), 2); // the user message, the step
//! assert_eq!(restored.len(), live.len());
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

mod binary;
mod error;
mod event;
mod read;
mod session;
#[cfg(test)]
mod tests;
mod write;

pub use self::error::{ItemError, LogError, RecordError};
pub use self::event::{
    decode, ClockChange, Decided, Entry, Event, ItemKind, LogHeader, StepRecord, Told,
    WatchReadings, MAX_TOLD_FIELDS,
};
use self::read::*;
pub use self::read::{ItemHead, ItemReader};
pub use self::session::{ItemStore, Reply, Restore, Session, SessionError};
use self::write::StepOut;

use core::hash::Hasher as _;

use heapless::Deque;
use siphasher::sip::SipHasher13;

use crate::agent_context::{AgentContext, StepError};
use crate::clock::Timestamp;
use crate::config::watch::{Decimal, Watch, WatchList};
use crate::config::{Config, ContextConfig, InjectionConfig};
use crate::conversation::{Block, Role};
use crate::engine::Outcome;
use crate::live::LiveFields;
use crate::rules::{Decision, StepInput, TaskCounts};
use crate::store::StoreError;
use crate::wire::BufferFull;

/// The log format's version, in every header.
pub const VERSION: u32 = 3;

/// The most blocks a `message` or `assistant` item may hold.
pub const MAX_EVENT_BLOCKS: usize = 16;

/// What a log was written for: restoring it elsewhere would not rebuild the
/// same decisions.
///
/// The hash is the same on every target (docs/reboot.md, "The header"
/// gives its encoding), so a host checks a device's log with
/// [`Header::for_session`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Header {
    /// [`VERSION`] when written.
    pub version: u32,
    /// A hash of the validated configuration, the agent's name and the
    /// context's capacities.
    pub config: u64,
    /// The context's capacities: messages, blocks and text bytes (the
    /// `AgentContext`'s three parameters), also written in clear so that
    /// a host can compute the hash without them.
    pub capacity: [u64; 3],
}

impl Header {
    /// The header of `context`'s log.
    pub fn of<const M: usize, const B: usize, const T: usize>(
        context: &AgentContext<'_, M, B, T>,
    ) -> Header {
        let capacity = [M, B, T].map(|c| c as u64);
        Header::for_session(context.engine().config().config(), context.agent_name(), capacity)
    }

    /// The header a session of `config` writes for the agent `agent_name`
    /// in a context of `capacity` (messages, blocks, text bytes): what a
    /// host computes to check a device's log.
    pub fn for_session(config: &Config<'_>, agent_name: &str, capacity: [u64; 3]) -> Header {
        let mut hasher = SipHasher13::new_with_keys(0x656e_7661_7761_7265, 0x6a6f_7572_6e61_6c31);
        let mut h = Encoding(&mut hasher);
        hash_config(&mut h, config);
        h.text(agent_name);
        capacity.iter().for_each(|&c| h.u64(c));
        Header { version: VERSION, config: hasher.finish(), capacity }
    }
}

/// The header hash's input: fixed-width little-endian integers, so that
/// every target hashes the same bytes (`write_usize` and the derived
/// `Hash` of an enum would feed the pointer width).
struct Encoding<'h>(&'h mut SipHasher13);

impl Encoding<'_> {
    fn u8(&mut self, n: u8) {
        self.0.write(&[n]);
    }
    fn u64(&mut self, n: u64) {
        self.0.write(&n.to_le_bytes());
    }
    /// A string: its length in bytes first, so neighbours cannot trade bytes.
    fn text(&mut self, text: &str) {
        self.u64(text.len() as u64);
        self.0.write(text.as_bytes());
    }
    /// A count of the items that follow.
    fn count(&mut self, n: usize) {
        self.u64(n as u64);
    }
    /// A decimal: its value in units of 10^-18, an `i128`.
    fn decimal(&mut self, value: Decimal) {
        self.0.write(&value.units().to_le_bytes());
    }
    /// A decimal that may be unset: 0, or 1 and the decimal.
    fn optional(&mut self, value: Option<Decimal>) {
        self.u64(u64::from(value.is_some()));
        value.into_iter().for_each(|d| self.decimal(d));
    }
}

/// Hashes every field of the configuration: the destructuring names them
/// all, so a new field does not compile until it is hashed too.
fn hash_config(h: &mut Encoding<'_>, config: &Config<'_>) {
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
    let ContextConfig {
        trigger_ratio,
        reserve_ratio,
        context_buffer_ratio: buffer,
        compression_tool_enabled,
    } = context;
    for flag in [
        inject_runtime_state,
        emit_hint_event,
        strict,
        filtered_zone_falls_back_to_utc,
        compression_tool_enabled,
    ] {
        h.u8(u8::from(*flag));
    }
    for text in [timezone, time_format, tool_retries_hint, template, injection_source] {
        h.text(text);
    }
    for number in [
        Some(*time_interval),
        *context_buffer_ratio,
        Some(*trigger_ratio),
        Some(*reserve_ratio),
        Some(*buffer),
    ] {
        h.u64(number.map_or(u64::MAX, f64::to_bits));
    }
    h.u64(*tool_retries_limit);
    h.count(task_tool_names.len());
    task_tool_names.iter().for_each(|name| h.text(name));
    h.count(extra_fields.len());
    for (key, value) in extra_fields.iter() {
        h.text(key);
        h.text(value);
    }
    h.count(watch.len());
    for (field, w) in watch.iter() {
        let Watch { change, above, below, hysteresis, min_interval, max_interval } = w;
        h.text(field);
        for bound in [change, above, below] {
            h.optional(bound);
        }
        h.decimal(hysteresis);
        // Only with a time rule, so a watch without one hashes as before.
        if w.has_time_rule() {
            for interval in [min_interval, max_interval] {
                h.u64(interval.map_or(0, |i| i.micros() as u64));
            }
        }
    }
}

/// Whether `config`'s settings load back into the same configuration: not
/// when a configuration built in code repeats an extra field's key or a
/// watch's name (a loader keeps one of each, so the hash would differ).
fn settings_round_trip(config: &Config<'_>) -> bool {
    let injection = &config.injection;
    let extra = injection.extra_fields;
    let keys_unique = (0..extra.len()).all(|i| {
        let key = extra.get(i).map(|(k, _)| k);
        (0..i).all(|j| extra.get(j).map(|(k, _)| k) != key)
    });
    let watch = &injection.watch;
    let names_unique = (0..watch.len()).all(|i| {
        let name = watch.get(i).map(|(n, _)| n);
        (0..i).all(|j| watch.get(j).map(|(n, _)| n) != name)
    });
    keys_unique && names_unique
}

/// A user message's block: its text, or none kept (as
/// [`AgentContext::user`]).
fn user_block(text: &str) -> Block<'_> {
    match text {
        "" => Block::Other,
        text => Block::Text(text),
    }
}

/// The items one call writes back to back into one buffer (a step or
/// an event, and the `compress` note an eviction owes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Items {
    ends: [usize; 2],
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
        core::iter::once(0)
            .chain(ends)
            .zip(ends)
            .take(count)
            .filter_map(move |(start, end)| buf.get(start..end))
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
    /// What the log says last, to write a step's inputs only when they
    /// change.
    said: Said,
    /// The check pass: the items' numbers read, the last header's
    /// position and the items before it that it still needs.
    checker: ItemReader,
    last_header: Option<(u32, u32)>,
    restored: u32,
    /// Steps the session took, across compactions.
    steps: u64,
    /// The position of the last header that carries the configuration
    /// (`settings`): a compaction's header carries it again only when
    /// that one is among the items popped.
    settings_at: Option<u32>,
    /// The outbox's mark to log with the next step
    /// ([`set_delivered`](Self::set_delivered)).
    outbox: Option<u32>,
    /// The outbox's mark the log said last (written or read back).
    delivered: Option<u32>,
}

/// What the log last said, as the replay keeps it: `None` where it is
/// unknown (the log's start, or after a header or a restore).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Said {
    config: Option<i64>,
    tasks: Option<TaskCounts>,
    clock: Option<Option<Timestamp>>,
    tokens: Option<i64>,
    /// The hash of the watched values said last.
    readings: Option<u64>,
    /// The replay's default `cur_iter` for the next step: 0 after a user
    /// message or a `reply`, one more than the last step's otherwise.
    iter: Option<u64>,
    /// The outbox's mark said last.
    delivered: Option<u32>,
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
        if let Event::User { .. } | Event::Reply = event {
            self.iter = Some(0);
        }
    }

    /// Takes a step into account: what it said, and the step's `cur_iter`.
    fn note_step(&mut self, input: &StepInput, now: Option<Timestamp>, readings: Option<u64>) {
        self.config = Some(input.context_size);
        self.tasks = Some(input.tasks);
        self.clock = Some(now);
        self.tokens = Some(input.input_tokens);
        self.readings = readings.or(self.readings);
        self.iter = Some(input.cur_iter.saturating_add(1));
    }

    /// A step item's inputs, read against what the log said before it (a
    /// change from a value it does not know is unknown: a compacted log's
    /// first items may change what a popped item said).
    fn resolve(&self, step: &StepRecord<'_>) -> (StepInput, Option<Timestamp>) {
        let now = match step.clock {
            ClockChange::Same => self.clock.flatten(),
            ClockChange::Advance(micros) => self
                .clock
                .flatten()
                .and_then(|then| then.unix_micros().checked_add(micros))
                .map(Timestamp),
            ClockChange::Set(at) => Some(at),
            ClockChange::Unknown => None,
        };
        let input = StepInput {
            tasks: step.tasks.or(self.tasks).unwrap_or_default(),
            cur_iter: step.cur_iter.or(self.iter).unwrap_or_default(),
            input_tokens: step.tokens.or(self.tokens).unwrap_or_default(),
            context_size: step.context_size.or(self.config).unwrap_or_default(),
        };
        (input, now)
    }
}

/// What writing an item changes in a [`Journal`], to put back when the
/// store refuses the item.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    next: u32,
    items: u32,
    said: Said,
    steps: u64,
    settings_at: Option<u32>,
    delivered: Option<u32>,
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
            checker: ItemReader::new(),
            last_header: None,
            restored: 0,
            steps: 0,
            settings_at: None,
            outbox: None,
            delivered: None,
        }
    }

    /// Where the log stands, before an item is written.
    pub(crate) fn mark(&self) -> Mark {
        let Journal { next, items, said, steps, settings_at, delivered, .. } = *self;
        Mark { next, items, said, steps, settings_at, delivered }
    }

    /// Back to `mark`: the items written since are not in the log.
    pub(crate) fn rewind(&mut self, mark: Mark) {
        Mark {
            next: self.next,
            items: self.items,
            said: self.said,
            steps: self.steps,
            settings_at: self.settings_at,
            delivered: self.delivered,
        } = mark;
    }

    /// The header this journal writes and accepts.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Items in the log, as the journal counts them.
    pub fn items(&self) -> u32 {
        self.items
    }

    /// The number the next item gets (numbers count every item the log
    /// ever had, popped or not, modulo 2^32).
    pub fn next_number(&self) -> u32 {
        self.next
    }

    /// Events and steps applied by [`restore`](Self::restore) (headers not
    /// counted).
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

    /// The clock the log said last: after [`restore`](Self::restore) of a
    /// step item, the time that step was decided at (a device's transcript
    /// stamps the messages it restores with it). `None` when the log has not
    /// said it, said it unknown, or moved it from a clock a compaction
    /// popped.
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
        self.write_header(context, 0, true, out)
    }

    /// Counts the item just written.
    fn wrote(&mut self) {
        self.next = self.next.wrapping_add(1);
        self.items = self.items.saturating_add(1);
    }

    /// Writes `event` as the next item.
    fn write(&mut self, event: &Event<'_>, out: &mut [u8]) -> Result<usize, BufferFull> {
        let n = write::write_event(self.next, event, out)?;
        self.wrote();
        self.said.note(event);
        Ok(n)
    }

    /// Writes a step as the next item, with the outbox's mark when it
    /// changed since the log said it.
    fn write_step<L: LiveFields + ?Sized>(
        &mut self,
        step: &StepOut<'_, L>,
        watches: &WatchList<'_>,
        out: &mut [u8],
    ) -> Result<usize, BufferFull> {
        let mark = self.outbox.filter(|&m| self.said.delivered != Some(m) && m <= self.next);
        let step = StepOut { delivered: mark, ..*step };
        let n = write::write_step(self.next, &step, &self.said, watches, out)?;
        if mark.is_some() {
            self.said.delivered = mark;
            self.delivered = mark;
        }
        self.wrote();
        let readings = (!watches.is_empty()).then(|| step.readings.hash());
        self.said.note_step(step.input, step.now, readings);
        self.steps += 1;
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
        self.all_or_nothing(|journal| {
            let mut items = Items::default();
            Self::plan(context, event)?;
            journal.push_item(out, &mut items, |journal, out| journal.write(event, out))?;
            let evicted = journal.apply(context, event, journal.items - 1)?;
            journal.compress_note(context, evicted, out, &mut items)?;
            Ok(items)
        })
    }

    /// Runs `write`; when it fails, the journal is as it was before it
    /// (nothing counted, nothing said), as the caller appends nothing.
    fn all_or_nothing<R>(
        &mut self,
        write: impl FnOnce(&mut Self) -> Result<R, RecordError>,
    ) -> Result<R, RecordError> {
        let saved = (self.mark(), self.created.clone());
        let result = write(self);
        if result.is_err() {
            self.rewind(saved.0);
            self.created = saved.1;
        }
        result
    }

    /// When the store evicted messages to take an item: writes and applies
    /// the `compress` item that follows, so that a replay without the
    /// store's capacity keeps the same messages.
    fn compress_note<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        evicted: usize,
        out: &mut [u8],
        items: &mut Items,
    ) -> Result<(), RecordError> {
        if evicted > 0 {
            let kept = Event::Compress { keep: context.len() };
            self.push_item(out, items, |journal, out| journal.write(&kept, out))?;
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
            Event::User { name, text } => {
                context.observe(Role::User, name, &[user_block(text)])?.evicted
            }
            Event::Message { role, name, blocks } => context.observe(role, name, blocks)?.evicted,
            Event::Assistant(blocks) => context.agent(blocks)?.evicted,
            Event::ToolCall { id, name, input } => context.tool_call(id, name, input)?.evicted,
            Event::ToolResult { id, name, state } => context.tool_result(id, name, state)?.evicted,
            Event::Reply => {
                context.new_reply();
                0
            }
            Event::Compress { keep } => {
                context.compress(keep);
                0
            }
        };
        self.created_by(context, newest, index);
        Ok(evicted)
    }

    /// Appends a step's hint (the item at position `index`), as live and
    /// restore both do.
    fn apply_hint<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        hint: &str,
        at: Option<Timestamp>,
        index: u32,
    ) -> Result<usize, StoreError> {
        let newest = context.sequence(0);
        let evicted = context.append_hint(hint, at)?.evicted;
        self.created_by(context, newest, index);
        Ok(evicted)
    }

    /// Notes that the item at `index` created the newest message, if it did
    /// (`newest` was the newest before it), and forgets evicted ones.
    fn created_by<const B: usize, const T: usize>(
        &mut self,
        context: &AgentContext<'_, MESSAGES, B, T>,
        newest: Option<u64>,
        index: u32,
    ) {
        if context.sequence(0).is_some() && context.sequence(0) != newest {
            if self.created.is_full() {
                self.created.pop_front();
            }
            let _ = self.created.push_back(index);
        }
        while self.created.len() > context.len() {
            self.created.pop_front();
        }
    }

    /// Whether `context` would take `event`, checked before it is logged
    /// (a log must not hold an event its context refused): `apply`'s
    /// cases, with nothing changed.
    fn plan<const B: usize, const T: usize>(
        context: &AgentContext<'_, MESSAGES, B, T>,
        event: &Event<'_>,
    ) -> Result<(), RecordError> {
        // What a restore can read back (`MAX_EVENT_BLOCKS`), else the log
        // would hold an event the restore refuses.
        if let Event::Message { blocks, .. } | Event::Assistant(blocks) = *event {
            if blocks.len() > MAX_EVENT_BLOCKS {
                return Err(RecordError::TooManyBlocks { blocks: blocks.len() });
            }
        }
        match *event {
            Event::User { name, text } => context.plan(false, name, &[user_block(text)]),
            Event::Message { name, blocks, .. } => context.plan(false, name, blocks),
            Event::Assistant(blocks) => context.plan(true, "", blocks),
            Event::ToolCall { id, name, input } => {
                context.plan(true, "", &[Block::ToolCall { id, name, input }])
            }
            Event::ToolResult { id, name, state } => {
                context.plan(true, "", &[Block::ToolResult { id, name, state, output: "" }])
            }
            Event::Reply | Event::Compress { .. } => Ok(0),
        }
        .map(drop)
        .map_err(RecordError::from)
    }

    /// Whether the context takes a step's `hint` and its item can be read
    /// back ([`MAX_TOLD_FIELDS`]), checked before the step is logged.
    fn plan_step<const B: usize, const T: usize, L: LiveFields + ?Sized>(
        context: &AgentContext<'_, MESSAGES, B, T>,
        hint: Option<&str>,
        told: &L,
    ) -> Result<(), RecordError> {
        let Some(hint) = hint else { return Ok(()) };
        if told.len() > MAX_TOLD_FIELDS {
            return Err(RecordError::TooManyLiveFields { fields: told.len() });
        }
        // Its instant takes no room: any will do to check it fits.
        context
            .plan(true, "", &[context.hint_block(hint, None)])
            .map(drop)
            .map_err(RecordError::from)
    }

    /// One step, logged: decides, renders the hint into `hint_out`, writes
    /// the `step` item (its inputs where they changed, the watched values,
    /// the decision and the live values told), then appends the hint (as
    /// [`AgentContext::step`]). The items are in `items_out`, to append in
    /// order.
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
        let engine = *context.engine();
        // As `AgentContext::step`: the watched fields are read before
        // deciding, and not again when it fires.
        let decision = context.decide_with_readings(step, now, engine.read_watched(live));
        self.render_step_read(context, decision, step, live, hint_out, items_out, engine.watches())
    }

    /// The first half of a split step (as
    /// [`AgentContext::decide_with_readings`]): decides with the watched
    /// fields' `readings` (awaited by the caller). Nothing is logged until
    /// [`render_step`](Self::render_step) logs the step whole.
    pub fn decide<const B: usize, const T: usize, L: LiveFields + ?Sized>(
        &self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        step: &StepInput,
        now: Option<Timestamp>,
        readings: &L,
    ) -> Decision {
        context.decide_with_readings(step, now, readings)
    }

    /// The second half of a split step, logged: refreshes `live` when the
    /// `decision` of [`decide`](Self::decide) fires, renders the hint into
    /// `hint_out`, writes the `step` item into `items_out` and appends the
    /// hint (as [`AgentContext::render_step`]). The watched values logged
    /// are those `live` holds then: the ones the decision read, unless its
    /// `refresh` read them again.
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
        self.render_step_read(context, decision, step, live, hint_out, items_out, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn render_step_read<'h, const B: usize, const T: usize, L: LiveFields + ?Sized>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        decision: Decision,
        step: &StepInput,
        live: &mut L,
        hint_out: &'h mut [u8],
        items_out: &mut [u8],
        read_before: bool,
    ) -> Result<(Outcome<'h>, Items), RecordError> {
        let engine = *context.engine();
        let outcome = engine
            .render_read(decision, context.store(), live, hint_out, read_before)
            .map_err(StepError::from)?;
        Self::plan_step(context, outcome.hint, &*live)?;
        self.all_or_nothing(|journal| {
            let mut items = Items::default();
            let watches = engine.config().config().injection.watch;
            let out = StepOut {
                input: step,
                now: decision.now,
                readings: WatchReadings::of(&watches, &*live),
                decision: &decision,
                told: &*live,
                delivered: None,
            };
            journal.push_item(items_out, &mut items, |j, o| j.write_step(&out, &watches, o))?;
            if let Some(hint) = outcome.hint {
                let evicted = journal.apply_hint(context, hint, decision.now, journal.items - 1)?;
                journal.compress_note(context, evicted, items_out, &mut items)?;
            }
            Ok((outcome, items))
        })
    }

    /// Writes an item with `write` after the `items` already in `out`.
    fn push_item(
        &mut self,
        out: &mut [u8],
        items: &mut Items,
        write: impl FnOnce(&mut Self, &mut [u8]) -> Result<usize, BufferFull>,
    ) -> Result<(), BufferFull> {
        let start =
            items.count.checked_sub(1).and_then(|i| items.ends.get(i)).copied().unwrap_or(0);
        let rest = out.get_mut(start..).unwrap_or_default();
        let n = write(self, rest)?;
        if let Some(end) = items.ends.get_mut(items.count) {
            *end = start + n;
            items.count += 1;
        }
        Ok(())
    }

    /// Sets the outbox's mark (`mark`: the first item number not yet
    /// delivered; `None`: no outbox): the next step item carries it when
    /// it changed since the log said it. [`Session`] sets it from its
    /// store ([`ItemStore::delivered`]) before each step.
    pub fn set_delivered(&mut self, mark: Option<u32>) {
        self.outbox = mark;
    }

    /// The outbox's mark the log said last (written, or read back by
    /// [`restore`](Self::restore)): the first item number not yet
    /// delivered then. `None`: no step carried one.
    pub fn delivered(&self) -> Option<u32> {
        self.delivered
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
        let dead = self.dead_items();
        let carry = self.settings_at.is_none_or(|at| at < dead);
        self.write_header(context, self.items - dead, carry, out)
    }

    /// Writes a header, with the configuration when `carry` and it fits
    /// `out` (else without: the log still restores, and a replay asks for
    /// `--config`).
    fn write_header<const B: usize, const T: usize>(
        &mut self,
        context: &AgentContext<'_, MESSAGES, B, T>,
        live: u32,
        carry: bool,
        out: &mut [u8],
    ) -> Result<usize, BufferFull> {
        let header = LogHeader {
            header: self.header,
            number: self.next,
            live,
            agent: context.agent_name(),
            steps: self.steps,
            settings: None,
        };
        let config = context.engine().config().config();
        let written = match carry && settings_round_trip(config) {
            true => write::write_header(self.next, &header, Some((config, self.said.config)), out)
                .ok()
                .inspect(|_| self.settings_at = Some(self.items)),
            false => None,
        };
        let n = match written {
            Some(n) => n,
            None => write::write_header(self.next, &header, None, out)?,
        };
        self.wrote();
        self.said = Said::default();
        Ok(n)
    }

    /// `count` items were popped from the front of the log.
    pub fn popped(&mut self, count: u32) {
        let count = count.min(self.items);
        self.items -= count;
        self.settings_at = self.settings_at.and_then(|at| at.checked_sub(count));
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
        let index = self.checker.items();
        let error = |kind| LogError { index, kind };
        // A copy: the item is counted only once its header is accepted too.
        let mut checker = self.checker;
        let head = checker.read(item)?;
        if head.kind == ItemKind::Header {
            let log = read_header_item(item).map_err(error)?;
            if log.header.config != self.header.config {
                return Err(error(ItemError::Config {
                    found: log.header.config,
                    expected: self.header.config,
                }));
            }
            // Only the last header counts: an earlier one may name items a
            // later compaction popped.
            self.last_header = Some((index, log.live));
        }
        self.checker = checker;
        Ok(())
    }

    /// The second pass: applies `item`, the next of the log, to `context`
    /// (empty before the first), if the context still needs it. A step
    /// item's hint is rendered again into `scratch` (as long as the longest
    /// hint) from what the item records. Returns whether the item was
    /// applied.
    ///
    /// # Errors
    ///
    /// A damaged item, a hint that does not fit `scratch`, or a log that
    /// [`check`](Self::check) did not read whole or found no header in.
    /// Start from an empty context then.
    pub fn restore<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        item: &[u8],
        scratch: &mut [u8],
    ) -> Result<bool, LogError> {
        self.restore_item(context, item, scratch, |_, _| {}).map(|applied| applied.is_some())
    }

    /// [`restore`](Self::restore), with the messages the store evicted
    /// applying the item and whether it was a `compress` (`None`: not
    /// applied); `before_step` sees the context and a step's instant just
    /// before the step is applied.
    pub(crate) fn restore_item<'e, const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'e, MESSAGES, B, T>,
        item: &[u8],
        scratch: &mut [u8],
        before_step: impl FnOnce(&AgentContext<'e, MESSAGES, B, T>, Option<Timestamp>),
    ) -> Result<Option<(usize, bool)>, LogError> {
        let index = self.items;
        let error = |kind| LogError { index, kind };
        let Some((header, live)) = self.last_header else {
            return Err(LogError { index: self.checker.items(), kind: ItemError::MissingHeader });
        };
        let needed_from = header
            .checked_sub(live)
            .ok_or(LogError { index: header, kind: ItemError::Field("live") })?;
        if index >= self.checker.items() {
            return Err(error(ItemError::Unchecked));
        }
        let engine = *context.engine();
        let watches = engine.config().config().injection.watch;
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        let (_, entry) = read_entry(item, &watches, &mut blocks).map_err(error)?;
        self.items += 1;
        // Numbers count on from the check pass's first.
        self.next = self.checker.first_number().unwrap_or(0).wrapping_add(self.items);
        match entry {
            Entry::Header(log) => {
                // The steps before it, popped or not, are in its count.
                self.steps = log.steps;
                if log.settings.is_some() {
                    self.settings_at = Some(index);
                }
                self.said = Said::default();
                Ok(None)
            }
            Entry::Event(event) if index >= needed_from => {
                let evicted =
                    self.apply(context, &event, index).map_err(|e| error(ItemError::Store(e)))?;
                self.said.note(&event);
                self.restored += 1;
                Ok(Some((evicted, matches!(event, Event::Compress { .. }))))
            }
            Entry::Step(step) => {
                let (input, now) = self.said.resolve(&step);
                let applied = match index >= needed_from {
                    false => None,
                    true => {
                        before_step(context, now);
                        let evicted =
                            self.restore_hint(context, &step, &input, now, index, scratch)?;
                        self.restored += 1;
                        Some((evicted, false))
                    }
                };
                let readings = step.readings.map(|r| r.hash());
                self.said.note_step(&input, now, readings);
                if let Some(u) = step.undelivered {
                    // This item's number, less the items not yet delivered.
                    let mark = self.next.wrapping_sub(1).wrapping_sub(u);
                    self.said.delivered = Some(mark);
                    self.delivered = Some(mark);
                }
                self.steps += 1;
                Ok(applied)
            }
            Entry::Event(event) => {
                self.said.note(&event);
                Ok(None)
            }
        }
    }

    /// Renders a step item's hint again, as the live step rendered it (the
    /// context is the one it decided on), and appends it.
    fn restore_hint<const B: usize, const T: usize>(
        &mut self,
        context: &mut AgentContext<'_, MESSAGES, B, T>,
        step: &StepRecord<'_>,
        input: &StepInput,
        now: Option<Timestamp>,
        index: u32,
        scratch: &mut [u8],
    ) -> Result<usize, LogError> {
        let error = |kind| LogError { index, kind };
        let decision = Decided::decision(step.decided, input, now);
        if !decision.fires() {
            return Ok(0);
        }
        let engine = *context.engine();
        let hint = engine
            .render(&decision, context.store(), &step.told, scratch)
            .map_err(|_| error(ItemError::ScratchFull))?
            .unwrap_or_default();
        self.apply_hint(context, hint, now, index).map_err(|e| error(ItemError::Store(e)))
    }
}
