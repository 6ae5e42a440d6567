//! Reading items back: the parser of each event.

use super::*;
use crate::clock::Timestamp;
use crate::conversation::{Block, HintText, Role, ToolResultState};
use crate::json::{self, JsonStr, Kind, Value};
use crate::rules::TaskCounts;
use crate::time::CreatedAt;

/// An item's number and event, as [`ItemReader::read`] gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemHead<'a> {
    /// The item's number (`"#"`).
    pub number: u32,
    /// The event's name (`"log"`, `"user"`, `"step"`, …) as the item spells
    /// it (escapes not decoded). Not checked against the events the log
    /// writes: restoring does that ([`ItemError::UnknownEvent`]).
    pub event: &'a str,
}

/// The reader of a log's items, in order, for their numbers: what
/// [`Journal::check`] reads of every item, for a reader that does not
/// restore (`envaware-sim replay --flash` reads a device's flash image
/// with it).
///
/// Each item must be one line of UTF-8 JSON, an object of the item's number
/// (`"#"`, an integer from 0 to `u32::MAX`) and one event, numbered one
/// more than the item before it (modulo 2^32, as the journal writes them):
/// another number means an item between was lost. The first item may have
/// any number (a compacted log starts past 0).
///
/// ```
/// use envaware::journal::{ItemError, ItemReader, LogError};
///
/// let mut reader = ItemReader::new();
/// let head = reader.read(br##"{"#":7,"user":{"name":"operator","content":""}}"##)?;
/// assert_eq!((head.number, head.event), (7, "user"));
/// let lost = reader.read(br##"{"#":9,"reply":null}"##).unwrap_err();
/// assert_eq!(lost, LogError { index: 1, kind: ItemError::Gap { expected: 8, found: 9 } });
/// assert_eq!(lost.to_string(), "log item 1: item number 9, expected 8: an item was lost");
/// # Ok::<(), LogError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemReader {
    /// Items read.
    read: u32,
    /// The number the next item must have (`None` before the first).
    next: Option<u32>,
}

impl ItemReader {
    /// A reader before the log's first item.
    pub const fn new() -> Self {
        ItemReader { read: 0, next: None }
    }

    /// Items read so far (an item refused is not counted).
    pub fn items(&self) -> u32 {
        self.read
    }

    /// Reads `item`, the log's next: its number and event.
    ///
    /// # Errors
    ///
    /// A [`LogError`] naming the item (its position, from 0): not UTF-8,
    /// a line break in it, not JSON, not an item, a number out of range, or
    /// a number that does not follow the item before ([`ItemError::Gap`]).
    /// A refused item is not counted: the next call reads the same position.
    pub fn read<'a>(&mut self, item: &'a [u8]) -> Result<ItemHead<'a>, LogError> {
        let (number, event, _) = self.read_value(item)?;
        Ok(ItemHead { number, event: event.raw() })
    }

    /// As [`read`](Self::read), also giving the event's value.
    pub(crate) fn read_value<'a>(
        &mut self,
        item: &'a [u8],
    ) -> Result<(u32, JsonStr<'a>, Value<'a>), LogError> {
        let index = self.read;
        let error = |kind| LogError { index, kind };
        let (number, key, value) = read_item(item).map_err(error)?;
        if let Some(expected) = self.next.filter(|&expected| expected != number) {
            return Err(error(ItemError::Gap { expected, found: number }));
        }
        self.next = Some(number.wrapping_add(1));
        self.read = index.saturating_add(1);
        Ok((number, key, value))
    }
}

/// An item's number, event name and value.
pub(crate) fn read_item(item: &[u8]) -> Result<(u32, JsonStr<'_>, Value<'_>), ItemError> {
    if let Some(offset) = item.iter().position(|&b| b == b'\n' || b == b'\r') {
        return Err(ItemError::LineBreak { offset });
    }
    let text = core::str::from_utf8(item).map_err(|_| ItemError::NotUtf8)?;
    let value = json::parse(text, MAX_DEPTH).map_err(ItemError::Json)?;
    let mut members = value.members();
    let (Some((hash, n)), Some((key, event)), None) =
        (members.next(), members.next(), members.next())
    else {
        return Err(ItemError::NotAnItem);
    };
    let Some(digits) = n.number_text().filter(|_| hash.eq_str("#")) else {
        return Err(ItemError::NotAnItem);
    };
    // Where the number is in the item, for the error (both point into `item`).
    let offset = (digits.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    let n = digits.parse().map_err(|_| ItemError::Number { offset })?;
    Ok((n, key, event))
}

/// The member `name` of an object.
pub(crate) fn field<'a>(object: Value<'a>, name: &'static str) -> Result<Value<'a>, ItemError> {
    object
        .members()
        .find(|(key, _)| key.eq_str(name))
        .map(|(_, value)| value)
        .ok_or(ItemError::Field(name))
}

pub(crate) fn number<N: core::str::FromStr>(
    object: Value<'_>,
    name: &'static str,
) -> Result<N, ItemError> {
    field(object, name)?.number_text().and_then(|t| t.parse().ok()).ok_or(ItemError::Field(name))
}

/// The number `name`, or what the log last said when it is left out.
pub(crate) fn number_or<N: core::str::FromStr + Default>(
    object: Value<'_>,
    name: &'static str,
    said: Option<N>,
) -> Result<N, ItemError> {
    match field(object, name) {
        Ok(_) => number(object, name),
        Err(_) => Ok(said.unwrap_or_default()),
    }
}

/// `2026-07-22T02:30:00Z` or `2026-07-22T02:30:00.250000Z`, as
/// [`Rfc3339`](crate::wire::Rfc3339) writes it: years 1 to 9999, as
/// strftime's `%Y` writes them (no leading zeros).
pub(crate) fn read_rfc3339(text: &str) -> Option<Timestamp> {
    read_wall_clock(text.strip_suffix('Z')?).map(Timestamp)
}

/// A hint block's `created_at` as the log writes it ([`CreatedAt`]'s
/// `Display`): `…Z` an instant, else a wall clock. The reader of
/// `set_clock`'s own form, not the general [`CreatedAt::parse`], so that a
/// device links one.
fn read_created_at(text: &str) -> Option<CreatedAt> {
    match text.strip_suffix('Z') {
        Some(instant) => read_wall_clock(instant).map(|at| CreatedAt::Instant(Timestamp(at))),
        None => read_wall_clock(text).map(CreatedAt::WallClock),
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff]` as microseconds since 1970-01-01T00:00
/// of that clock.
fn read_wall_clock(text: &str) -> Option<i64> {
    let (date_time, micros) = match text.split_once('.') {
        Some((dt, f)) if f.len() == 6 => (dt, digits(f)?),
        Some(_) => return None,
        None => (text, 0),
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
    Some(at.and_utc().timestamp_micros())
}

/// A run of ASCII digits (no sign, unlike `str::parse`).
pub(crate) fn digits(text: &str) -> Option<i64> {
    text.bytes().try_fold(0i64, |n, b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(i64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// A header's version, configuration and capacities, its `live` items and
/// `steps`. The version is read first: a header of another version is
/// refused as such, whatever else it holds.
pub(crate) fn read_header(value: Value<'_>) -> Result<(Header, u32, u64), ItemError> {
    let version = number(value, "version")?;
    if version != VERSION {
        return Err(ItemError::Version { found: version });
    }
    let config =
        field(value, "config")?.as_str().and_then(|s| u64::from_str_radix(s.raw(), 16).ok());
    let mut capacity = [0u64; 3];
    let mut items = field(value, "capacity")?.items();
    for slot in &mut capacity {
        let n = items.next().and_then(|v| v.number_text()?.parse().ok());
        *slot = n.ok_or(ItemError::Field("capacity"))?;
    }
    if items.next().is_some() {
        return Err(ItemError::Field("capacity"));
    }
    let header = Header { version, config: config.ok_or(ItemError::Field("config"))?, capacity };
    Ok((header, number(value, "live")?, number_or(value, "steps", None)?))
}

/// Where an item's strings with escapes are decoded.
pub(crate) struct Scratch<'a> {
    pub(crate) rest: &'a mut [u8],
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
    fn decode(
        &mut self,
        mut parts: impl Iterator<Item = JsonStr<'a>>,
    ) -> Result<Option<&'a str>, ItemError> {
        let Some(first) = parts.next() else { return Ok(None) };
        json::decode_into(&mut self.rest, core::iter::once(first).chain(parts)).map(Some).map_err(
            |e| match e {
                json::DecodeError::Full => ItemError::ScratchFull,
                json::DecodeError::NotUtf8 => ItemError::NotUtf8,
            },
        )
    }
}

/// The event named `key` with the value `value`; strings are decoded into
/// `scratch`, blocks into `blocks`.
pub(crate) fn read_event<'a: 'b, 'b>(
    key: JsonStr<'a>,
    value: Value<'a>,
    said: &Said,
    scratch: &mut Scratch<'a>,
    blocks: &'b mut [Block<'a>; MAX_EVENT_BLOCKS],
) -> Result<Event<'b>, ItemError> {
    let name = |scratch: &mut Scratch<'a>| scratch.text(value, "name");
    Ok(match key.raw() {
        "config" => Event::Config {
            agent_name: scratch.text(value, "agent_name")?,
            context_size: number(value, "context_size")?,
        },
        "set_clock" => match value.kind() {
            Kind::Null => Event::SetClock(None),
            _ => Event::SetClock(Some(
                value
                    .as_str()
                    .and_then(|t| read_rfc3339(t.raw()))
                    .ok_or(ItemError::Field("set_clock"))?,
            )),
        },
        "advance" => {
            let micros = match value.kind() {
                Kind::Number => value
                    .number_text()
                    .and_then(|t| t.parse::<i64>().ok())
                    .and_then(|s| s.checked_mul(1_000_000)),
                _ => value.as_str().and_then(|t| t.raw().strip_suffix("us")?.parse().ok()),
            };
            let micros = micros.ok_or(ItemError::Field("advance"))?;
            // A compacted log's first live items may advance from a clock
            // set in an item popped since: the time is unknown there.
            Event::SetClock(
                said.clock
                    .flatten()
                    .and_then(|then| Some(Timestamp(then.unix_micros().checked_add(micros)?))),
            )
        }
        "tasks" => Event::Tasks(read_tasks(value)?),
        "user" => Event::User { name: name(scratch)? },
        "message" => {
            let role = field(value, "role")?
                .as_str()
                .and_then(|r| Role::from_name(r.raw()))
                .ok_or(ItemError::Field("role"))?;
            let name = name(scratch)?;
            Event::Message {
                role,
                name,
                blocks: read_blocks(field(value, "content")?, scratch, blocks)?,
            }
        }
        "assistant" => Event::Assistant(read_blocks(value, scratch, blocks)?),
        "tool_call" => Event::ToolCall {
            id: scratch.text(value, "id")?,
            name: name(scratch)?,
            input: scratch.text(value, "input")?,
        },
        "tool_result" => {
            let state =
                field(value, "state")?.as_str().and_then(|s| ToolResultState::from_name(s.raw()));
            Event::ToolResult {
                id: scratch.text(value, "id")?,
                name: name(scratch)?,
                state: state.ok_or(ItemError::Field("state"))?,
            }
        }
        "reply" => Event::Reply,
        "compress" => Event::Compress {
            keep: value
                .number_text()
                .and_then(|t| t.parse().ok())
                .ok_or(ItemError::Field("compress"))?,
        },
        "read" => Event::Read(Readings::read(value)?),
        "step" => {
            let hint = match field(value, "hint")?.kind() {
                Kind::Null => None,
                _ => Some(scratch.text(value, "hint")?),
            };
            let cur_iter = number_or(value, "cur_iter", said.iter)?;
            let at = match value.members().find(|(key, _)| key.eq_str("at")) {
                None => said.clock.flatten(),
                Some((_, at)) => Some(
                    at.as_str()
                        .and_then(|at| read_rfc3339(at.raw()))
                        .ok_or(ItemError::Field("at"))?,
                ),
            };
            let tokens = number_or(value, "tokens", said.tokens)?;
            Event::Step { cur_iter, tokens, hint, at }
        }
        _ => return Err(ItemError::UnknownEvent),
    })
}

pub(crate) fn read_tasks(value: Value<'_>) -> Result<TaskCounts, ItemError> {
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
pub(crate) fn read_blocks<'a: 'b, 'b>(
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

pub(crate) fn read_block<'a>(
    block: Value<'a>,
    scratch: &mut Scratch<'a>,
) -> Result<Block<'a>, ItemError> {
    let kind = field(block, "type")?.as_str().ok_or(ItemError::Field("type"))?;
    Ok(match kind.raw() {
        // The writer writes a block it keeps no data of ([`Block::Other`])
        // as an empty text: read back as that, never sent in a request.
        "text" => match scratch.text(block, "text")? {
            "" => Block::Other,
            text => Block::Text(text),
        },
        "tool_call" => Block::ToolCall {
            id: scratch.text(block, "id")?,
            name: scratch.text(block, "name")?,
            input: scratch.text(block, "input")?,
        },
        "tool_result" => {
            let state =
                field(block, "state")?.as_str().and_then(|s| ToolResultState::from_name(s.raw()));
            Block::ToolResult {
                id: scratch.text(block, "id")?,
                name: scratch.text(block, "name")?,
                state: state.ok_or(ItemError::Field("state"))?,
                output: scratch.text(block, "output")?,
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
                    let parts =
                        hint.items().map(|part| field(part, "text").ok().and_then(|t| t.as_str()));
                    if parts.clone().any(|p| p.is_none()) {
                        return Err(ItemError::Field("hint"));
                    }
                    scratch.decode(parts.flatten())?.unwrap_or("")
                }
                _ => return Err(ItemError::Field("hint")),
            };
            // A `created_at` that does not read is an unknown one, as in a
            // context: the time rules then count its age as unknown.
            let created_at = field(block, "created_at")
                .ok()
                .and_then(|at| at.as_str())
                .and_then(|at| read_created_at(at.raw()));
            Block::Hint { source, text: HintText::Single(text), created_at }
        }
        _ => return Err(ItemError::Field("type")),
    })
}
