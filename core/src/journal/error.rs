//! What can be wrong with a log item, a log, or a record.

use core::fmt;

use super::*;
use crate::agent_context::StepError;
use crate::store::StoreError;
use crate::wire::BufferFull;

/// What is wrong with a log item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ItemError {
    /// A string in the item is not UTF-8.
    NotUtf8,
    /// The item is in the text form of format versions 1 and 2 (a JSON
    /// object) but is not a header, which would name its version: this
    /// build reads version [`VERSION`]'s binary items.
    TextForm,
    /// The item's first byte names no kind of item.
    UnknownEvent,
    /// This field of the item is missing, cut short, or out of its range.
    Field(&'static str),
    /// Bytes left after the item's last field.
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// The item's number does not follow the previous item's: one was lost
    /// (numbers count modulo 2^32, as the journal writes them; an item
    /// carries their low 16 bits, a header the whole number).
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
    /// The hint a step item renders again does not fit the scratch buffer.
    ScratchFull,
    /// The item holds more than [`MAX_EVENT_BLOCKS`] blocks.
    TooManyBlocks,
    /// The context could not apply the event.
    Store(StoreError),
}

impl fmt::Display for ItemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemError::NotUtf8 => f.write_str("a string that is not UTF-8"),
            ItemError::TextForm => write!(
                f,
                "an item of the text form of format versions 1 and 2 (JSON): this build reads version {VERSION}"
            ),
            ItemError::UnknownEvent => f.write_str("unknown kind of item"),
            ItemError::Field(name) => write!(f, "field {name:?} missing, cut short or out of range"),
            ItemError::TrailingBytes { count } => {
                write!(f, "{count} bytes after its last field")
            }
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
            ItemError::ScratchFull => f.write_str("its hint does not fit the scratch buffer"),
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
    /// A `message` or `assistant` event of more blocks than a restore
    /// reads back ([`MAX_EVENT_BLOCKS`]).
    TooManyBlocks {
        /// The event's blocks.
        blocks: usize,
    },
    /// A step whose hint tells more live fields than a restore reads back
    /// ([`MAX_TOLD_FIELDS`]).
    TooManyLiveFields {
        /// The step's live fields.
        fields: usize,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::BufferFull(e) => write!(f, "the log item: {e}"),
            RecordError::Step(e) => e.fmt(f),
            RecordError::TooManyBlocks { blocks } => write!(
                f,
                "an event of {blocks} blocks: a log item holds at most {MAX_EVENT_BLOCKS}"
            ),
            RecordError::TooManyLiveFields { fields } => write!(
                f,
                "a hint telling {fields} live fields: a log item holds at most {MAX_TOLD_FIELDS}"
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
