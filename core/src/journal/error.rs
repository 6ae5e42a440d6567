//! What can be wrong with a log item, a log, or a record.

use core::fmt;

use super::*;
use crate::agent_context::StepError;
use crate::json::JsonError;
use crate::store::StoreError;
use crate::wire::BufferFull;

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
    /// A line break (`\n` or `\r`) at this byte offset of the item: an
    /// item is one line (the writer escapes them in strings and writes no
    /// whitespace), so a log dumped one item a line cannot split it.
    LineBreak {
        /// Its byte offset in the item.
        offset: usize,
    },
    /// The item's number (at this byte offset of the item) is not an
    /// integer from 0 to `u32::MAX`, the numbers the journal writes.
    Number {
        /// The number's byte offset in the item.
        offset: usize,
    },
    /// The event's name is not one the log writes.
    UnknownEvent,
    /// This field of the event is missing or not of its type.
    Field(&'static str),
    /// The item's number does not follow the previous item's: one was lost
    /// (numbers count modulo 2^32, as the journal writes them: 0 follows
    /// `u32::MAX`).
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
            ItemError::NotAnItem => {
                f.write_str("not an object of an item number \"#\" and one event")
            }
            ItemError::LineBreak { offset } => {
                write!(f, "a line break at byte {offset}: an item is one line")
            }
            ItemError::Number { offset } => write!(
                f,
                "its number \"#\" at byte {offset} is not an integer from 0 to {}",
                u32::MAX
            ),
            ItemError::UnknownEvent => f.write_str("unknown event"),
            ItemError::Field(name) => write!(f, "field {name:?} missing or of the wrong type"),
            ItemError::Gap { expected, found } => {
                write!(f, "item number {found}, expected {expected}: an item was lost")
            }
            ItemError::Version { found } => {
                write!(f, "log format version {found}, this build reads {VERSION}")
            }
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

impl core::error::Error for ItemError {}

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
    /// A `message` or `assistant` event of more blocks than a restore
    /// reads back ([`MAX_EVENT_BLOCKS`]).
    TooManyBlocks {
        /// The event's blocks.
        blocks: usize,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::BufferFull(e) => write!(f, "the log item: {e}"),
            RecordError::Step(e) => e.fmt(f),
            RecordError::NotRecordable => {
                f.write_str("a header is written by start or compaction_header")
            }
            RecordError::TooManyBlocks { blocks } => write!(
                f,
                "an event of {blocks} blocks: a log item holds at most {MAX_EVENT_BLOCKS}"
            ),
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
