//! Reading items back: the decoder of each item, and the reader of a
//! log's item numbers.

use super::binary::In;
use super::write::{clock, decided_bit, step_flag, tag, told_tag, STATES};
use super::*;
use crate::clock::Timestamp;
use crate::config::watch::{WatchList, MAX_WATCHES};
use crate::conversation::{Block, HintText, Role, ToolResultState};
use crate::rules::watch::WatchSet;
use crate::rules::{TaskCounts, ToolError};
use crate::time::CreatedAt;

/// An item's number and kind, as [`ItemReader::read`] gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct ItemHead {
    /// The low 16 bits of the item's number, which every item carries.
    pub seq: u16,
    /// The item's whole number, once the reader has read a header (which
    /// carries it; the items before the log's first header learn theirs
    /// from it: [`ItemReader::first_number`]).
    pub number: Option<u32>,
    /// What the item holds.
    pub kind: ItemKind,
}

/// The reader of a log's items, in order, for their numbers: what
/// [`Journal::check`] reads of every item, for a reader that does not
/// restore (`envaware-sim replay --flash` reads a device's flash image
/// with it, the firmware counts its environment steps).
///
/// Each item starts with its kind (one byte) and the low 16 bits of its
/// number; a header also carries the high 16. Numbers follow one another
/// (modulo 2^32, as the journal writes them): another number means an item
/// between was lost. The first item may have any number (a compacted log
/// starts past 0).
///
/// ```
/// use envaware::journal::{ItemError, ItemKind, ItemReader, LogError};
///
/// let mut reader = ItemReader::new();
/// let head = reader.read(&[7, 0x05, 0x00])?; // a reply, item 5
/// assert_eq!((head.seq, head.kind), (5, ItemKind::Reply));
/// let lost = reader.read(&[7, 0x07, 0x00]).unwrap_err();
/// assert_eq!(lost, LogError { index: 1, kind: ItemError::Gap { expected: 6, found: 7 } });
/// assert_eq!(lost.to_string(), "log item 1: item number 7, expected 6: an item was lost");
/// # Ok::<(), LogError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemReader {
    /// Items read.
    read: u32,
    /// The low 16 bits the next item must have (`None` before the first).
    next: Option<u16>,
    /// The first item's whole number, once a header said it.
    first: Option<u32>,
}

impl ItemReader {
    /// A reader before the log's first item.
    pub const fn new() -> Self {
        ItemReader { read: 0, next: None, first: None }
    }

    /// Items read so far (an item refused is not counted).
    pub fn items(&self) -> u32 {
        self.read
    }

    /// The whole number of the first item read, once a header was read.
    pub fn first_number(&self) -> Option<u32> {
        self.first
    }

    /// Reads `item`, the log's next: its number and kind.
    ///
    /// # Errors
    ///
    /// A [`LogError`] naming the item (its position, from 0): an item of
    /// the text form (format versions 1 and 2), an unknown kind, too
    /// short, a header whose whole number is not the one its position
    /// gives, or a number that does not follow the item before
    /// ([`ItemError::Gap`]). A refused item is not counted: the next call
    /// reads the same position.
    pub fn read(&mut self, item: &[u8]) -> Result<ItemHead, LogError> {
        let index = self.read;
        let error = |kind| LogError { index, kind };
        let (kind, seq, high) = read_head(item).map_err(error)?;
        if let Some(expected) = self.next.filter(|&expected| expected != seq) {
            let (expected, found) = (u32::from(expected), u32::from(seq));
            return Err(error(ItemError::Gap { expected, found }));
        }
        let mut first = self.first;
        if let Some(high) = high {
            let number = u32::from(high) << 16 | u32::from(seq);
            let from_it = number.wrapping_sub(index);
            if first.is_some_and(|f| f != from_it) {
                let expected = first.unwrap_or(0).wrapping_add(index);
                return Err(error(ItemError::Gap { expected, found: number }));
            }
            first = Some(from_it);
        }
        self.first = first;
        self.next = Some(seq.wrapping_add(1));
        self.read = index.saturating_add(1);
        let number = first.map(|f| f.wrapping_add(index));
        Ok(ItemHead { seq, number, kind })
    }
}

/// An item's kind, the low bits of its number, and the high bits a header
/// carries.
pub(crate) fn read_head(item: &[u8]) -> Result<(ItemKind, u16, Option<u16>), ItemError> {
    let mut input = In::new(item);
    let first = input.u8("kind")?;
    if first == b'{' {
        return Err(text_form(item));
    }
    let kind = ItemKind::of(first).ok_or(ItemError::UnknownEvent)?;
    let seq = input.u16("number")?;
    let high = match kind {
        ItemKind::Header => Some(input.u16("number")?),
        _ => None,
    };
    Ok((kind, seq, high))
}

/// An item of the text form: the JSON objects of format versions 1 and 2.
/// A header names its version; any other is [`ItemError::TextForm`].
fn text_form(item: &[u8]) -> ItemError {
    let version = core::str::from_utf8(item)
        .ok()
        .and_then(|text| crate::json::parse(text, 4).ok())
        .and_then(|v| v.members().find(|(k, _)| k.eq_str("log")).map(|(_, log)| log))
        .and_then(|log| log.members().find(|(k, _)| k.eq_str("version")).map(|(_, v)| v))
        .and_then(|v| v.number_text()?.parse().ok());
    match version {
        Some(found) => ItemError::Version { found },
        None => ItemError::TextForm,
    }
}

/// The item's entry; its blocks into `blocks`.
pub(crate) fn read_entry<'a: 'b, 'b>(
    item: &'a [u8],
    watches: &WatchList<'a>,
    blocks: &'b mut [Block<'a>; MAX_EVENT_BLOCKS],
) -> Result<(u16, Entry<'b>), ItemError> {
    let (kind, seq, high) = read_head(item)?;
    let mut input = In::new(item);
    // Past the head read above.
    input.bytes(if high.is_some() { 5 } else { 3 }, "kind")?;
    let entry = match kind {
        ItemKind::Header => Entry::Header(read_header(&mut input, seq, high.unwrap_or(0))?),
        ItemKind::User => {
            Entry::Event(Event::User { name: input.str("name")?, text: input.str("text")? })
        }
        ItemKind::Message => {
            let role = match input.u8("role")? {
                0 => Role::User,
                1 => Role::Assistant,
                2 => Role::System,
                _ => return Err(ItemError::Field("role")),
            };
            let name = input.str("name")?;
            Entry::Event(Event::Message { role, name, blocks: read_blocks(&mut input, blocks)? })
        }
        ItemKind::Assistant => Entry::Event(Event::Assistant(read_blocks(&mut input, blocks)?)),
        ItemKind::ToolCall => Entry::Event(Event::ToolCall {
            id: input.str("id")?,
            name: input.str("name")?,
            input: input.str("input")?,
        }),
        ItemKind::ToolResult => Entry::Event(Event::ToolResult {
            state: read_state(&mut input)?,
            id: input.str("id")?,
            name: input.str("name")?,
        }),
        ItemKind::Reply => Entry::Event(Event::Reply),
        ItemKind::Compress => Entry::Event(Event::Compress { keep: input.size("compress")? }),
        ItemKind::Step => Entry::Step(read_step(&mut input, watches)?),
    };
    input.end()?;
    Ok((seq, entry))
}

/// A header item, read alone (the check pass reads every header).
pub(crate) fn read_header_item(item: &[u8]) -> Result<LogHeader<'_>, ItemError> {
    let mut input = In::new(item);
    let (kind, seq, high) = (input.u8("kind")?, input.u16("number")?, input.u16("number")?);
    if kind != ItemKind::Header.byte() {
        return Err(ItemError::UnknownEvent);
    }
    let header = read_header(&mut input, seq, high)?;
    input.end()?;
    Ok(header)
}

fn read_header<'a>(input: &mut In<'a>, seq: u16, high: u16) -> Result<LogHeader<'a>, ItemError> {
    let version = input.varint("version")?;
    if version != u64::from(VERSION) {
        return Err(ItemError::Version { found: u32::try_from(version).unwrap_or(u32::MAX) });
    }
    let config = input.u64_fixed("config")?;
    let mut capacity = [0u64; 3];
    for slot in &mut capacity {
        *slot = input.varint("capacity")?;
    }
    let live = u32::try_from(input.varint("live")?).map_err(|_| ItemError::Field("live"))?;
    let steps = input.varint("steps")?;
    let agent = input.str("agent")?;
    let settings = match input.u8("settings")? {
        0 => None,
        1 => {
            let b = input.bytes(4, "settings")?;
            let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let n = usize::try_from(n).map_err(|_| ItemError::Field("settings"))?;
            Some(
                core::str::from_utf8(input.bytes(n, "settings")?)
                    .map_err(|_| ItemError::NotUtf8)?,
            )
        }
        _ => return Err(ItemError::Field("settings")),
    };
    Ok(LogHeader {
        header: Header { version: VERSION, config, capacity },
        number: u32::from(high) << 16 | u32::from(seq),
        live,
        agent,
        steps,
        settings,
    })
}

fn read_state(input: &mut In<'_>) -> Result<ToolResultState, ItemError> {
    STATES.get(usize::from(input.u8("state")?)).copied().ok_or(ItemError::Field("state"))
}

fn read_blocks<'a: 'b, 'b>(
    input: &mut In<'a>,
    blocks: &'b mut [Block<'a>; MAX_EVENT_BLOCKS],
) -> Result<&'b [Block<'a>], ItemError> {
    let count = usize::from(input.u8("content")?);
    if count > MAX_EVENT_BLOCKS {
        return Err(ItemError::TooManyBlocks);
    }
    for i in 0..count {
        let block = match input.u8("type")? {
            tag::OTHER => Block::Other,
            tag::TEXT => Block::Text(input.str("text")?),
            tag::TOOL_CALL => Block::ToolCall {
                id: input.str("id")?,
                name: input.str("name")?,
                input: input.str("input")?,
            },
            tag::TOOL_RESULT => {
                let state = read_state(input)?;
                let output = input.str("output")?;
                Block::ToolResult { state, output, id: input.str("id")?, name: input.str("name")? }
            }
            tag::TOOL_RESULT_OF_CALL => {
                let call = usize::from(input.u8("call")?);
                let Some(&Block::ToolCall { id, name, .. }) =
                    blocks.get(..i).and_then(|b| b.get(call))
                else {
                    return Err(ItemError::Field("call"));
                };
                let state = read_state(input)?;
                Block::ToolResult { id, name, state, output: input.str("output")? }
            }
            tag::HINT => {
                let flags = input.u8("hint")?;
                if flags & !0b111 != 0 {
                    return Err(ItemError::Field("hint"));
                }
                let source = match flags & 1 {
                    0 => None,
                    _ => Some(input.str("source")?),
                };
                let text = HintText::Single(input.str("hint")?);
                let created_at = match flags >> 1 {
                    0 => None,
                    1 => Some(CreatedAt::Instant(Timestamp(input.signed("created_at")?))),
                    2 => Some(CreatedAt::WallClock(input.signed("created_at")?)),
                    _ => return Err(ItemError::Field("created_at")),
                };
                Block::Hint { source, text, created_at }
            }
            _ => return Err(ItemError::Field("type")),
        };
        if let Some(slot) = blocks.get_mut(i) {
            *slot = block;
        }
    }
    Ok(blocks.get(..count).unwrap_or_default())
}

fn read_step<'a>(input: &mut In<'a>, watches: &WatchList<'a>) -> Result<StepRecord<'a>, ItemError> {
    let flags = input.varint("step")?;
    if flags & !step_flag::ALL != 0 {
        return Err(ItemError::Field("step"));
    }
    let mut step = StepRecord {
        clock: match flags & step_flag::CLOCK {
            clock::SAME => ClockChange::Same,
            clock::SECONDS => ClockChange::Advance(scaled(input, 1_000_000)?),
            clock::MILLIS => ClockChange::Advance(scaled(input, 1_000)?),
            clock::MICROS => ClockChange::Advance(input.signed("advance")?),
            clock::SET => ClockChange::Set(Timestamp(input.signed("set_clock")?)),
            clock::UNKNOWN => ClockChange::Unknown,
            clock::SET_MILLIS => ClockChange::Set(Timestamp(scaled(input, 1_000)?)),
            _ => return Err(ItemError::Field("clock")),
        },
        ..StepRecord::default()
    };
    let has = |flag| flags & flag != 0;
    if has(step_flag::TOKENS) {
        step.tokens = Some(input.signed("tokens")?);
    }
    if has(step_flag::CUR_ITER) {
        step.cur_iter = Some(input.varint("cur_iter")?);
    }
    if has(step_flag::READINGS) {
        let mask = input.u8("read")?;
        if u32::from(mask) >> watches.len().min(MAX_WATCHES) != 0 {
            return Err(ItemError::Field("read"));
        }
        let mut readings = WatchReadings::default();
        for i in (0..MAX_WATCHES).filter(|i| mask & 1 << i != 0) {
            readings.set(i, Some(input.str("read")?));
        }
        step.readings = Some(readings);
    }
    if has(step_flag::TASKS) {
        let pending = input.varint("tasks")?;
        step.tasks = Some(TaskCounts { pending, in_progress: input.varint("tasks")? });
    }
    if has(step_flag::CONTEXT_SIZE) {
        step.context_size = Some(input.signed("context_size")?);
    }
    if has(step_flag::DELIVERED) {
        let u = input.varint("delivered")?;
        step.undelivered = Some(u32::try_from(u).map_err(|_| ItemError::Field("delivered"))?);
    }
    if has(step_flag::DECIDED) {
        let decided = read_decided(input)?;
        if decided.fires() {
            step.told = read_told(input, step.readings.as_ref(), watches)?;
        }
        step.decided = Some(decided);
    }
    Ok(step)
}

/// An advance in whole seconds or milliseconds, as microseconds.
fn scaled(input: &mut In<'_>, unit: i64) -> Result<i64, ItemError> {
    let n = i64::try_from(input.varint("advance")?).ok();
    n.and_then(|n| n.checked_mul(unit)).ok_or(ItemError::Field("advance"))
}

fn read_decided(input: &mut In<'_>) -> Result<Decided, ItemError> {
    let bits = input.u8("decided")?;
    if bits & !decided_bit::ALL != 0
        || (bits & decided_bit::SUGGEST != 0 && bits & decided_bit::CONTEXT == 0)
    {
        return Err(ItemError::Field("decided"));
    }
    let has = |bit| bits & bit != 0;
    let mut d = Decided {
        time: has(decided_bit::TIME),
        tasks: has(decided_bit::TASKS),
        ..Decided::default()
    };
    if has(decided_bit::CONTEXT) {
        d.context = Some((input.signed("context")?, has(decided_bit::SUGGEST)));
    }
    if has(decided_bit::TOOL_ERROR) {
        let count = input.varint("tool_error")?;
        d.tool_error = Some(ToolError { count, result: input.size("tool_error")? });
    }
    if has(decided_bit::WATCH) {
        let fired = input.u8("watch")?;
        let throttled = input.u8("watch")?;
        d.watch = WatchSet::from_bits([fired & 0x0F, fired >> 4, throttled])
            .filter(|w| w.bits() != [0, 0, 0])
            .ok_or(ItemError::Field("watch"))?;
    }
    if !d.fires() && d.watch.bits()[2] == 0 {
        // A step records a decision only when it fired or held one back.
        return Err(ItemError::Field("decided"));
    }
    Ok(d)
}

fn read_told<'a>(
    input: &mut In<'a>,
    readings: Option<&WatchReadings<'a>>,
    watches: &WatchList<'a>,
) -> Result<Told<'a>, ItemError> {
    let count = usize::from(input.u8("told")?);
    let mut told = Told::default();
    for _ in 0..count {
        let t = input.u8("told")?;
        let watch = usize::from(t & told_tag::WATCH_INDEX);
        let unknown = t & !(told_tag::WATCH_NAME | told_tag::WATCH_VALUE | told_tag::WATCH_INDEX);
        let by_watch = t & told_tag::WATCH_NAME != 0;
        if unknown != 0 || (!by_watch && t != 0) {
            return Err(ItemError::Field("told"));
        }
        let name = match by_watch {
            true => watches.get(watch).map(|(name, _)| name).ok_or(ItemError::Field("told"))?,
            false => input.str("told")?,
        };
        let value = match t & told_tag::WATCH_VALUE {
            0 => input.str("told")?,
            _ => readings.and_then(|r| r.get(watch)).ok_or(ItemError::Field("told"))?,
        };
        told.push(name, value)?;
    }
    Ok(told)
}
