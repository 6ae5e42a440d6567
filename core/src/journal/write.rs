//! Writing items: the encoder of each item (docs/reboot.md, "The items"),
//! and the header's configuration as the session configuration file's
//! JSON.

use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

use super::binary::Out;
use super::*;
use crate::config::watch::{WatchList, MAX_WATCHES};
use crate::config::{ExtraFields, StrList};
use crate::conversation::{Block, Role, ToolResultState};
use crate::time::CreatedAt;

/// The low 16 bits of item number `n`, which every item carries.
fn seq(n: u32) -> u16 {
    n as u16
}

/// Writes the item numbered `n` for `event`.
pub(crate) fn write_event(n: u32, event: &Event<'_>, out: &mut [u8]) -> Result<usize, BufferFull> {
    let mut o = Out::new(out);
    o.u8(event.kind().byte());
    o.u16(seq(n));
    match *event {
        Event::User { name, text } => {
            o.str(name);
            o.str(text);
        }
        Event::Message { role, name, blocks } => {
            o.u8(role_byte(role));
            o.str(name);
            write_blocks(&mut o, blocks);
        }
        Event::Assistant(blocks) => write_blocks(&mut o, blocks),
        Event::ToolCall { id, name, input } => {
            o.str(id);
            o.str(name);
            o.str(input);
        }
        Event::ToolResult { id, name, state } => {
            o.u8(state_byte(state));
            o.str(id);
            o.str(name);
        }
        Event::Reply => {}
        Event::Compress { keep } => o.varint(keep as u64),
    }
    o.finish()
}

pub(crate) fn role_byte(role: Role) -> u8 {
    match role {
        Role::User => 0,
        Role::Assistant => 1,
        Role::System => 2,
    }
}

pub(crate) fn state_byte(state: ToolResultState) -> u8 {
    STATES.iter().position(|s| *s == state).unwrap_or(0) as u8
}

/// The tool result states by their byte.
pub(crate) const STATES: [ToolResultState; 5] = [
    ToolResultState::Success,
    ToolResultState::Error,
    ToolResultState::Interrupted,
    ToolResultState::Denied,
    ToolResultState::Running,
];

/// A block's tag.
pub(crate) mod tag {
    pub(crate) const OTHER: u8 = 0;
    pub(crate) const TEXT: u8 = 1;
    pub(crate) const TOOL_CALL: u8 = 2;
    pub(crate) const TOOL_RESULT: u8 = 3;
    /// A tool result whose id and tool are those of a call earlier in the
    /// same item (its index follows): a result is mostly logged with its call.
    pub(crate) const TOOL_RESULT_OF_CALL: u8 = 4;
    pub(crate) const HINT: u8 = 5;
}

fn write_blocks(o: &mut Out<'_>, blocks: &[Block<'_>]) {
    // `Journal::plan` refused more than `MAX_EVENT_BLOCKS`.
    o.u8(blocks.len().min(usize::from(u8::MAX)) as u8);
    for (i, block) in blocks.iter().enumerate() {
        match *block {
            Block::Other => o.u8(tag::OTHER),
            Block::Text(text) => {
                o.u8(tag::TEXT);
                o.str(text);
            }
            Block::ToolCall { id, name, input } => {
                o.u8(tag::TOOL_CALL);
                o.str(id);
                o.str(name);
                o.str(input);
            }
            Block::ToolResult { id, name, state, output } => {
                let call = blocks.get(..i).unwrap_or_default().iter().rposition(|b| {
                    matches!(*b, Block::ToolCall { id: i, name: n, .. } if i == id && n == name)
                });
                match call {
                    Some(k) => {
                        o.u8(tag::TOOL_RESULT_OF_CALL);
                        o.u8(k as u8);
                        o.u8(state_byte(state));
                        o.str(output);
                    }
                    None => {
                        o.u8(tag::TOOL_RESULT);
                        o.u8(state_byte(state));
                        o.str(output);
                        o.str(id);
                        o.str(name);
                    }
                }
            }
            Block::Hint { source, text, created_at } => {
                let at = match created_at {
                    None => 0,
                    Some(CreatedAt::Instant(_)) => 1,
                    Some(CreatedAt::WallClock(_)) => 2,
                };
                o.u8(tag::HINT);
                o.u8(u8::from(source.is_some()) | at << 1);
                if let Some(source) = source {
                    o.str(source);
                }
                o.joined(text.parts());
                match created_at {
                    Some(CreatedAt::Instant(t)) => o.signed(t.unix_micros()),
                    Some(CreatedAt::WallClock(micros)) => o.signed(micros),
                    None => {}
                }
            }
        }
    }
}

/// A step's flags (a LEB128 integer: the frequent ones in its first byte).
pub(crate) mod step_flag {
    /// Bits 0 to 2: how the clock moved ([`super::clock`]).
    pub(crate) const CLOCK: u64 = 0b111;
    pub(crate) const TOKENS: u64 = 1 << 3;
    pub(crate) const CUR_ITER: u64 = 1 << 4;
    pub(crate) const READINGS: u64 = 1 << 5;
    pub(crate) const DECIDED: u64 = 1 << 6;
    pub(crate) const TASKS: u64 = 1 << 7;
    pub(crate) const CONTEXT_SIZE: u64 = 1 << 8;
    /// The outbox's mark: the items before this one not yet delivered.
    pub(crate) const DELIVERED: u64 = 1 << 9;
    pub(crate) const ALL: u64 = (1 << 10) - 1;
}

/// How a step's clock moved, in its flags' low bits.
pub(crate) mod clock {
    pub(crate) const SAME: u64 = 0;
    pub(crate) const SECONDS: u64 = 1;
    pub(crate) const MILLIS: u64 = 2;
    pub(crate) const MICROS: u64 = 3;
    pub(crate) const SET: u64 = 4;
    pub(crate) const UNKNOWN: u64 = 5;
    /// Set, in whole milliseconds since 1970 (a device's clock ticks in them).
    pub(crate) const SET_MILLIS: u64 = 6;
}

/// The bits of a step's `decided` byte.
pub(crate) mod decided_bit {
    pub(crate) const TIME: u8 = 1;
    pub(crate) const TASKS: u8 = 1 << 1;
    pub(crate) const CONTEXT: u8 = 1 << 2;
    pub(crate) const SUGGEST: u8 = 1 << 3;
    pub(crate) const TOOL_ERROR: u8 = 1 << 4;
    pub(crate) const WATCH: u8 = 1 << 5;
    pub(crate) const ALL: u8 = (1 << 6) - 1;
}

/// A told field's tag: its name is watch `tag & WATCH_INDEX`'s; its value
/// is that watch's reading in the same item.
pub(crate) mod told_tag {
    pub(crate) const WATCH_NAME: u8 = 1 << 7;
    pub(crate) const WATCH_VALUE: u8 = 1 << 6;
    pub(crate) const WATCH_INDEX: u8 = 0b111;
}

/// What a step logs: its inputs, the watched values it decided on, its
/// decision, and the live fields its hint told.
pub(crate) struct StepOut<'s, L: ?Sized> {
    pub(crate) input: &'s StepInput,
    pub(crate) now: Option<Timestamp>,
    pub(crate) readings: WatchReadings<'s>,
    pub(crate) decision: &'s Decision,
    pub(crate) told: &'s L,
    /// The outbox's mark (the first item not yet delivered), when it
    /// changed since the log said it last.
    pub(crate) delivered: Option<u32>,
}

/// Writes step item `n`, given what the log said before it.
pub(crate) fn write_step<L: LiveFields + ?Sized>(
    n: u32,
    step: &StepOut<'_, L>,
    said: &Said,
    watches: &WatchList<'_>,
    out: &mut [u8],
) -> Result<usize, BufferFull> {
    let StepOut { input, now, readings, decision, told, delivered } = *step;
    // Said as the items before this one not yet delivered (a mark past
    // this item cannot be: it is not published yet).
    let undelivered = delivered.and_then(|mark| n.checked_sub(mark));
    let decided = Decided::of(decision);
    let fires = decision.fires();
    // A firing step says what its hint shows in full (its instant, and the
    // counts it tells), not as a change: a compaction may pop the items
    // the change is from, and a restore renders the hint from this item.
    let advance = said.advance(now).filter(|_| !fires);
    let (clock_kind, clock_value) = match (said.clock, now) {
        (Some(then), now) if then == now && !fires => (clock::SAME, None),
        (_, None) => (clock::UNKNOWN, None),
        (_, Some(now)) => match advance {
            Some(us) if us > 0 && us % 1_000_000 == 0 => (clock::SECONDS, Some(us / 1_000_000)),
            Some(us) if us > 0 && us % 1_000 == 0 => (clock::MILLIS, Some(us / 1_000)),
            Some(us) => (clock::MICROS, Some(us)),
            None if now.unix_micros() >= 0 && now.unix_micros() % 1_000 == 0 => {
                (clock::SET_MILLIS, Some(now.unix_micros() / 1_000))
            }
            None => (clock::SET, Some(now.unix_micros())),
        },
    };
    let readings_changed = said.readings != Some(readings.hash());
    // A firing step says its readings again: its told values refer to them.
    let write_readings = !watches.is_empty() && (readings_changed || fires);
    let mut flags = clock_kind;
    let told_tasks = decision.tasks.is_some();
    let told_tokens = decision.context.is_some();
    for (on, flag) in [
        (said.tokens != Some(input.input_tokens) || told_tokens, step_flag::TOKENS),
        (said.iter != Some(input.cur_iter), step_flag::CUR_ITER),
        (write_readings, step_flag::READINGS),
        (decided.is_some(), step_flag::DECIDED),
        (said.tasks != Some(input.tasks) || told_tasks, step_flag::TASKS),
        (said.config != Some(input.context_size), step_flag::CONTEXT_SIZE),
        (undelivered.is_some(), step_flag::DELIVERED),
    ] {
        if on {
            flags |= flag;
        }
    }
    let mut o = Out::new(out);
    o.u8(ItemKind::Step.byte());
    o.u16(seq(n));
    o.varint(flags);
    match (clock_kind, clock_value) {
        (clock::SECONDS | clock::MILLIS | clock::SET_MILLIS, Some(v)) => o.varint(v as u64),
        (_, Some(v)) => o.signed(v),
        _ => {}
    }
    if flags & step_flag::TOKENS != 0 {
        o.signed(input.input_tokens);
    }
    if flags & step_flag::CUR_ITER != 0 {
        o.varint(input.cur_iter);
    }
    if write_readings {
        let mask = (0..MAX_WATCHES).fold(0u8, |m, i| m | u8::from(readings.get(i).is_some()) << i);
        o.u8(mask);
        (0..MAX_WATCHES).filter_map(|i| readings.get(i)).for_each(|v| o.str(v));
    }
    if flags & step_flag::TASKS != 0 {
        o.varint(input.tasks.pending);
        o.varint(input.tasks.in_progress);
    }
    if flags & step_flag::CONTEXT_SIZE != 0 {
        o.signed(input.context_size);
    }
    if let Some(u) = undelivered {
        o.varint(u64::from(u));
    }
    if let Some(d) = decided {
        write_decided(&mut o, &d);
        if fires {
            write_told(&mut o, told, &readings, watches, write_readings);
        }
    }
    o.finish()
}

fn write_decided(o: &mut Out<'_>, d: &Decided) {
    let [fired, heartbeat, throttled] = d.watch.bits();
    let watch = fired | throttled != 0;
    let mut bits = 0;
    for (on, bit) in [
        (d.time, decided_bit::TIME),
        (d.tasks, decided_bit::TASKS),
        (d.context.is_some(), decided_bit::CONTEXT),
        (d.context.is_some_and(|(_, suggest)| suggest), decided_bit::SUGGEST),
        (d.tool_error.is_some(), decided_bit::TOOL_ERROR),
        (watch, decided_bit::WATCH),
    ] {
        if on {
            bits |= bit;
        }
    }
    o.u8(bits);
    if let Some((trigger, _)) = d.context {
        o.signed(trigger);
    }
    if let Some(e) = d.tool_error {
        o.varint(e.count);
        o.varint(e.result as u64);
    }
    if watch {
        o.u8(fired | heartbeat << 4);
        o.u8(throttled);
    }
}

/// The told fields: a watched field's name as its watch's index, and its
/// value as that watch's reading when the item holds it.
fn write_told<L: LiveFields + ?Sized>(
    o: &mut Out<'_>,
    told: &L,
    readings: &WatchReadings<'_>,
    watches: &WatchList<'_>,
    readings_written: bool,
) {
    // `Journal::plan_step` refused more than `MAX_TOLD_FIELDS`.
    o.u8(told.len().min(MAX_TOLD_FIELDS) as u8);
    for (name, value) in (0..told.len()).filter_map(|i| told.field(i)) {
        let watch = watches.iter().position(|(w, _)| w == name);
        let same = watch.is_some_and(|i| readings_written && readings.get(i) == Some(value));
        let mut t = 0;
        if let Some(i) = watch {
            t |= told_tag::WATCH_NAME | i as u8;
        }
        if same {
            t |= told_tag::WATCH_VALUE;
        }
        o.u8(t);
        if watch.is_none() {
            o.str(name);
        }
        if !same {
            o.str(value);
        }
    }
}

/// Writes header item `n`.
pub(crate) fn write_header(
    n: u32,
    header: &LogHeader<'_>,
    config: Option<(&Config<'_>, Option<i64>)>,
    out: &mut [u8],
) -> Result<usize, BufferFull> {
    let capacity = out.len();
    let mut o = Out::new(out);
    o.u8(ItemKind::Header.byte());
    o.u16(seq(n));
    o.u16((n >> 16) as u16);
    o.varint(u64::from(header.header.version));
    o.u64_fixed(header.header.config);
    header.header.capacity.iter().for_each(|&c| o.varint(c));
    o.varint(u64::from(header.live));
    o.varint(header.steps);
    o.str(header.agent);
    o.u8(u8::from(config.is_some()));
    let len = o.finish()?;
    let Some((config, context_size)) = config else { return Ok(len) };
    // The settings' JSON after its length, a `u32` (written once the JSON's
    // size is known: a header is written rarely, 3 bytes are no matter).
    let full = BufferFull { capacity };
    let (head, rest) = out.split_at_mut_checked(len + 4).ok_or(full)?;
    let json = serde_json_core::to_slice(&SettingsOut(config, header.agent, context_size), rest)
        .map_err(|_| full)?;
    let length = u32::try_from(json).map_err(|_| full)?.to_le_bytes();
    head.iter_mut().skip(len).zip(length).for_each(|(d, s)| *d = s);
    Ok(len + 4 + json)
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
