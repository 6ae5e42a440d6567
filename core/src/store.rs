//! The fixed-capacity conversation store: an agent's context with no heap.

use core::fmt;

use heapless::{String, Vec};

use crate::conversation::{Block, Conversation, HintText, Message, Role, ToolResultState};
use crate::time::CreatedAt;

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Appended {
    /// How many of the oldest messages were evicted to make room.
    pub evicted: usize,
}

/// Why an append was refused. The store is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum StoreError {
    /// The message would hold more blocks than the whole store can.
    TooManyBlocks {
        /// Blocks the message would hold.
        needed: usize,
        /// Blocks the store holds in total.
        capacity: usize,
    },
    /// The message's strings would need more bytes than the whole text
    /// arena has.
    TooMuchText {
        /// Bytes the message's strings would need (saturated at
        /// `usize::MAX`).
        needed: usize,
        /// Bytes the arena holds in total.
        capacity: usize,
    },
    /// There is no message to append blocks to.
    Empty,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::TooManyBlocks { needed, capacity } => {
                write!(f, "the message needs {needed} blocks but the store holds {capacity}")
            }
            StoreError::TooMuchText { needed, capacity } => {
                write!(f, "the message needs {needed} bytes of text but the store holds {capacity}")
            }
            StoreError::Empty => f.write_str("the store holds no message to append to"),
        }
    }
}

impl core::error::Error for StoreError {}

/// One stored message: where its strings and blocks start.
///
/// Its blocks run up to the next message's first block; its name is the
/// first string of its text.
#[derive(Debug, Clone, Copy)]
struct MessageSlot {
    text_start: u32,
    block_start: u32,
    name_len: u32,
    role: Role,
}

/// What a stored block is; its strings follow one another in the arena.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Strings: source (empty when absent), text.
    Hint {
        has_source: bool,
        /// What kind of `created_at` the slot's `created_at` bits hold.
        created_at: Stamp,
    },
    /// Strings: id, name, input.
    ToolCall,
    /// Strings: id, name, output.
    ToolResult(ToolResultState),
    /// Strings: text.
    Text,
    Other,
}

/// Which [`CreatedAt`] a hint's slot holds (its 64 bits are the hint's
/// unused third length and [`BlockSlot::high`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    None,
    Instant,
    WallClock,
}

/// One stored block: its kind, where its strings start, their lengths.
/// A hint's `created_at` takes 9 bytes: the third length it does not use,
/// `high` and a byte of its kind.
#[derive(Debug, Clone, Copy)]
struct BlockSlot {
    start: u32,
    lens: [u32; 3],
    /// The high 32 bits of a hint's `created_at` (0 for other blocks).
    high: u32,
    kind: Kind,
}

impl BlockSlot {
    /// The created_at a hint's slot holds.
    fn created_at(&self, stamp: Stamp) -> Option<CreatedAt> {
        let micros = ((u64::from(self.high) << 32) | u64::from(self.lens[2])) as i64;
        match stamp {
            Stamp::None => None,
            Stamp::Instant => Some(CreatedAt::Instant(crate::clock::Timestamp(micros))),
            Stamp::WallClock => Some(CreatedAt::WallClock(micros)),
        }
    }
}

/// How a hint's `created_at` is kept: its kind and its 64 bits, split.
fn stamp_of(created_at: Option<CreatedAt>) -> (Stamp, u64) {
    match created_at {
        None => (Stamp::None, 0),
        Some(CreatedAt::Instant(at)) => (Stamp::Instant, at.0 as u64),
        Some(CreatedAt::WallClock(wall)) => (Stamp::WallClock, wall as u64),
    }
}

/// A fixed-capacity conversation: at most `MESSAGES` messages holding at
/// most `BLOCKS` blocks and `TEXT` bytes of strings in total.
///
/// Capacities are checked when the store is built: `MESSAGES` must be at
/// least 1, and `BLOCKS` and `TEXT` must fit in a `u32` (a store that
/// breaks this does not compile). The
/// eviction rule and the memory cost are below.
///
/// ```compile_fail
/// // No room for a message: refused at compile time.
/// let store = envaware::ContextStore::<0, 4, 64>::new();
/// ```
///
/// [`ContextStore`] keeps the messages an on-device agent has exchanged, in
/// three fixed pools sized by const generics: message slots, block slots and
/// one text arena shared by every string (names, call ids, tool names, raw
/// arguments, hint sources and hint texts). It implements
/// [`Conversation`], so the rules read it directly, newest message first.
///
/// # Appending
///
/// A message is committed whole by [`ContextStore::push_message`]; blocks
/// for the newest message (a tool result, an injected hint) are added by
/// [`ContextStore::append_blocks_to_last`], as AgentScope extends the
/// agent's own last message. A hint given as [`HintText::Parts`] is stored
/// as one string, the concatenation of its parts: the rules read nothing
/// else, and it is read back as [`HintText::Single`]. [`Block::Other`] keeps
/// its place but no data.
///
/// Nothing is ever half-written: every call either commits all its data or
/// returns a [`StoreError`] and leaves the store as it was. No method
/// panics, whatever its input.
///
/// # Eviction is compression
///
/// When new data does not fit, the oldest *whole* messages are evicted,
/// oldest first, until it does: never a part of a message, and never the
/// message being appended to. The caller learns how many went from
/// [`Appended::evicted`]; [`ContextStore::evicted_total`] counts them all.
/// Data that could not fit even in an empty store is refused with a
/// [`StoreError`] before anything is evicted.
///
/// This is a context compression in AgentScope's sense. In particular, when
/// the evicted messages held the newest time injection (a hint recording
/// `<current-time>`), the rules find no recorded time any more and inject
/// the time again at the next step, as AgentScope does "right after a
/// context compression"; likewise a tasks injection or task-related tool
/// calls that were evicted no longer count. [`ContextStore::compact`]
/// compresses deliberately, keeping only the newest messages.
///
/// # Memory
///
/// The store holds its pools inline; its size does not depend on what is
/// stored. With `W` the pointer width in bytes, `size_of::<ContextStore<M, B,
/// T>>()` is `16·M + 24·B + T + 3·W + 4`, plus padding to `W`-byte
/// alignment: on a 32-bit microcontroller, `16·M + 24·B + T + 16` with `T`
/// rounded up to a multiple of 4. Positions in the arena are `u32`, so the
/// slot sizes are the same on every target. Eviction moves the remaining
/// data to the front of each pool (a `memmove`), in time linear in what is
/// stored; reading is constant time per string.
///
/// # Example
///
/// ```
/// use envaware::{Block, Conversation, HintText, Message, Role, ToolResultState};
/// use envaware::ContextStore;
///
/// # fn main() -> Result<(), envaware::StoreError> {
/// // 8 messages, 32 blocks, 2 KiB of text.
/// let mut store: ContextStore<8, 32, 2048> = ContextStore::new();
/// store.push_message(Role::User, "user", &[Block::Other])?;
/// store.push_message(
///     Role::Assistant,
///     "friday",
///     &[Block::ToolCall { id: "c1", name: "read", input: r#"{"path": "/a"}"# }],
/// )?;
/// let done = store.append_blocks_to_last(&[Block::ToolResult {
///     id: "c1",
///     name: "read",
///     state: ToolResultState::Error,
///     output: "no such file",
/// }])?;
/// assert_eq!(done.evicted, 0);
///
/// let newest = store.newest(0).unwrap();
/// assert_eq!(newest.name(), "friday");
/// assert_eq!(newest.block_count(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ContextStore<const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize> {
    messages: Vec<MessageSlot, MESSAGES>,
    blocks: Vec<BlockSlot, BLOCKS>,
    text: String<TEXT>,
    evicted_total: u32,
}

impl<const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize>
    ContextStore<MESSAGES, BLOCKS, TEXT>
{
    /// How many messages the store holds at most.
    pub const MESSAGE_CAPACITY: usize = MESSAGES;
    /// How many blocks the store holds at most, over all messages.
    pub const BLOCK_CAPACITY: usize = BLOCKS;
    /// How many bytes of strings the store holds at most, over all messages.
    pub const TEXT_CAPACITY: usize = TEXT;

    /// An empty store. `const`, so it can live in a `static`.
    pub const fn new() -> Self {
        const {
            assert!(MESSAGES > 0, "a ContextStore needs room for one message");
            // Arena positions and block indices are stored as u32.
            assert!(BLOCKS as u64 <= u32::MAX as u64, "BLOCKS must fit in a u32");
            assert!(TEXT as u64 <= u32::MAX as u64, "TEXT must fit in a u32");
        }
        Self { messages: Vec::new(), blocks: Vec::new(), text: String::new(), evicted_total: 0 }
    }

    /// How many messages are stored.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether no message is stored.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// How many blocks are stored, over all messages.
    pub fn blocks_used(&self) -> usize {
        self.blocks.len()
    }

    /// How many bytes of the text arena are in use.
    pub fn text_used(&self) -> usize {
        self.text.len()
    }

    /// How many messages were evicted, by appends or by
    /// [`compact`](Self::compact), since the store was built or last
    /// [cleared](Self::clear). Saturates at `u32::MAX`.
    pub fn evicted_total(&self) -> u32 {
        self.evicted_total
    }

    /// Empties the store and resets [`evicted_total`](Self::evicted_total):
    /// the store is as [`new`](Self::new).
    pub fn clear(&mut self) {
        self.messages.clear();
        self.blocks.clear();
        self.text.clear();
        self.evicted_total = 0;
    }

    /// Evicts the oldest messages until at most `keep_newest` remain, and
    /// returns how many were evicted: a deliberate compression.
    pub fn compact(&mut self, keep_newest: usize) -> usize {
        let evict = self.messages.len().saturating_sub(keep_newest);
        self.evict(evict);
        evict
    }

    /// Appends a message with the given blocks, evicting the oldest
    /// messages as needed.
    ///
    /// # Errors
    ///
    /// [`StoreError::TooManyBlocks`] or [`StoreError::TooMuchText`] when the
    /// message would not fit even in an empty store; the store is then
    /// unchanged.
    pub fn push_message(
        &mut self,
        role: Role,
        name: &str,
        blocks: &[Block<'_>],
    ) -> Result<Appended, StoreError> {
        let text_needed =
            text_len(blocks).and_then(|n| n.checked_add(name.len())).unwrap_or(usize::MAX);
        let evict = self.push_plan(name, blocks)?;
        self.evict(evict);

        let (messages, blocks_before, text_before) = self.lengths();
        let slot = MessageSlot {
            text_start: to_u32(text_before),
            block_start: to_u32(blocks_before),
            name_len: to_u32(name.len()),
            role,
        };
        let written = self
            .messages
            .push(slot)
            .ok()
            .and_then(|()| self.text.push_str(name).ok())
            .and_then(|()| self.write_blocks(blocks));
        if written.is_none() {
            // Unreachable while `plan` is right; kept so that a mistake
            // there still cannot leave a message half-written.
            self.truncate(messages, blocks_before, text_before);
            return Err(too_large::<BLOCKS, TEXT>(blocks.len(), text_needed));
        }
        Ok(Appended { evicted: evict })
    }

    /// Appends blocks to the newest message, evicting older messages as
    /// needed (never the newest one).
    ///
    /// # Errors
    ///
    /// [`StoreError::Empty`] when there is no message;
    /// [`StoreError::TooManyBlocks`] or [`StoreError::TooMuchText`] when the
    /// grown message would not fit even alone in the store. The store is
    /// then unchanged.
    pub fn append_blocks_to_last(&mut self, blocks: &[Block<'_>]) -> Result<Appended, StoreError> {
        let text_needed = text_len(blocks).unwrap_or(usize::MAX);
        let evict = self.append_plan(blocks)?;
        self.evict(evict);

        let (messages, blocks_before, text_before) = self.lengths();
        if self.write_blocks(blocks).is_none() {
            // Unreachable while `plan` is right (see `push_message`).
            self.truncate(messages, blocks_before, text_before);
            return Err(too_large::<BLOCKS, TEXT>(blocks.len(), text_needed));
        }
        Ok(Appended { evicted: evict })
    }

    /// How many messages [`push_message`](Self::push_message) would evict
    /// for this message, or why it would refuse it: the store unchanged.
    pub(crate) fn push_plan(&self, name: &str, blocks: &[Block<'_>]) -> Result<usize, StoreError> {
        let text_needed =
            text_len(blocks).and_then(|n| n.checked_add(name.len())).unwrap_or(usize::MAX);
        self.plan(1, blocks.len(), text_needed, self.messages.len())
            .ok_or_else(|| too_large::<BLOCKS, TEXT>(blocks.len(), text_needed))
    }

    /// How many messages [`append_blocks_to_last`](Self::append_blocks_to_last)
    /// would evict for these blocks, or why it would refuse them.
    pub(crate) fn append_plan(&self, blocks: &[Block<'_>]) -> Result<usize, StoreError> {
        let (messages, blocks_before, text_before) = self.lengths();
        let last = messages.checked_sub(1).ok_or(StoreError::Empty)?;
        let text_needed = text_len(blocks).unwrap_or(usize::MAX);
        self.plan(0, blocks.len(), text_needed, last).ok_or_else(|| {
            // Refused only when the newest message alone cannot grow.
            let (last_blocks, last_text) = self.prefix(last);
            too_large::<BLOCKS, TEXT>(
                blocks_before.saturating_sub(last_blocks).saturating_add(blocks.len()),
                text_before.saturating_sub(last_text).saturating_add(text_needed),
            )
        })
    }

    /// The message `index` places after the oldest (`0` is the oldest).
    fn message(&self, index: usize) -> Option<StoredMessage<'_>> {
        let slot = self.messages.get(index)?;
        let block_end = match self.messages.get(index.saturating_add(1)) {
            Some(next) => next.block_start as usize,
            None => self.blocks.len(),
        };
        let blocks = self.blocks.get(slot.block_start as usize..block_end).unwrap_or(&[]);
        let text = self.text.as_str();
        let start = slot.text_start as usize;
        let name = text.get(start..start.saturating_add(slot.name_len as usize)).unwrap_or("");
        Some(StoredMessage { role: slot.role, name, blocks, text })
    }

    /// Messages, blocks and text bytes in use.
    fn lengths(&self) -> (usize, usize, usize) {
        (self.messages.len(), self.blocks.len(), self.text.len())
    }

    /// Blocks and text bytes held by the `count` oldest messages.
    fn prefix(&self, count: usize) -> (usize, usize) {
        match self.messages.get(count) {
            Some(slot) => (slot.block_start as usize, slot.text_start as usize),
            None => (self.blocks.len(), self.text.len()),
        }
    }

    /// The fewest oldest messages, at most `max_evict`, to evict so that
    /// `messages` more messages, `blocks` more blocks and `text` more bytes
    /// fit; `None` when even `max_evict` is not enough.
    fn plan(&self, messages: usize, blocks: usize, text: usize, max_evict: usize) -> Option<usize> {
        let (len, blocks_used, text_used) = self.lengths();
        (0..=max_evict.min(len)).find(|&evict| {
            let (freed_blocks, freed_text) = self.prefix(evict);
            len.saturating_sub(evict).saturating_add(messages) <= MESSAGES
                && blocks_used.saturating_sub(freed_blocks).saturating_add(blocks) <= BLOCKS
                && text_used.saturating_sub(freed_text).saturating_add(text) <= TEXT
        })
    }

    /// Evicts the `count` oldest messages, moving the rest to the front.
    fn evict(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        if count >= self.messages.len() {
            let evicted = self.messages.len();
            self.messages.clear();
            self.blocks.clear();
            self.text.clear();
            self.evicted_total = self.evicted_total.saturating_add(to_u32(evicted));
            return;
        }
        let (freed_blocks, freed_text) = self.prefix(count);
        // Bounded and checked here, so that heapless's own asserts are
        // never reached (`cargo xtask nopanic`).
        let freed_blocks = freed_blocks.min(self.blocks.len());
        drop(self.messages.drain(..count));
        drop(self.blocks.drain(..freed_blocks));
        // A message's text starts on a char boundary: it begins with a whole
        // `&str`, so draining up to it keeps the arena valid UTF-8.
        let freed_text = match self.text.is_char_boundary(freed_text) {
            true => freed_text,
            false => self.text.len(),
        };
        drop(self.text.drain(..freed_text));
        let (freed_blocks, freed_text) = (to_u32(freed_blocks), to_u32(freed_text));
        for slot in self.messages.iter_mut() {
            slot.block_start = slot.block_start.saturating_sub(freed_blocks);
            slot.text_start = slot.text_start.saturating_sub(freed_text);
        }
        for slot in self.blocks.iter_mut() {
            slot.start = slot.start.saturating_sub(freed_text);
        }
        self.evicted_total = self.evicted_total.saturating_add(to_u32(count));
    }

    /// Cuts the pools back to the given lengths (undoes a failed write).
    fn truncate(&mut self, messages: usize, blocks: usize, text: usize) {
        self.messages.truncate(messages);
        self.blocks.truncate(blocks);
        // `text` was the arena's length before the write: a char boundary.
        if self.text.is_char_boundary(text) {
            self.text.truncate(text);
        }
    }

    /// Stores `blocks` after everything else; `None` when a pool is full.
    fn write_blocks(&mut self, blocks: &[Block<'_>]) -> Option<()> {
        for block in blocks {
            let start = to_u32(self.text.len());
            let (kind, parts): (Kind, [&[&str]; 3]) = match block {
                Block::Hint { source, text, created_at } => (
                    Kind::Hint {
                        has_source: source.is_some(),
                        created_at: stamp_of(*created_at).0,
                    },
                    [source.as_ref().map(core::slice::from_ref).unwrap_or(&[]), text.parts(), &[]],
                ),
                Block::ToolCall { id, name, input } => (
                    Kind::ToolCall,
                    [
                        core::slice::from_ref(id),
                        core::slice::from_ref(name),
                        core::slice::from_ref(input),
                    ],
                ),
                Block::ToolResult { id, name, state, output } => (
                    Kind::ToolResult(*state),
                    [
                        core::slice::from_ref(id),
                        core::slice::from_ref(name),
                        core::slice::from_ref(output),
                    ],
                ),
                Block::Text(text) => (Kind::Text, [core::slice::from_ref(text), &[], &[]]),
                Block::Other => (Kind::Other, [&[], &[], &[]]),
            };
            let mut lens = [0u32; 3];
            for (len, pieces) in lens.iter_mut().zip(parts) {
                for piece in pieces {
                    self.text.push_str(piece).ok()?;
                }
                *len = to_u32(pieces.iter().fold(0, |n, p| n.saturating_add(p.len())));
            }
            let mut high = 0;
            if let Block::Hint { created_at, .. } = block {
                let bits = stamp_of(*created_at).1;
                (lens[2], high) = (bits as u32, (bits >> 32) as u32);
            }
            self.blocks.push(BlockSlot { start, lens, high, kind }).ok()?;
        }
        Some(())
    }
}

impl<const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize> Default
    for ContextStore<MESSAGES, BLOCKS, TEXT>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<const MESSAGES: usize, const BLOCKS: usize, const TEXT: usize> Conversation
    for ContextStore<MESSAGES, BLOCKS, TEXT>
{
    type Message<'m>
        = StoredMessage<'m>
    where
        Self: 'm;

    fn message_count(&self) -> usize {
        self.messages.len()
    }

    fn newest(&self, index: usize) -> Option<StoredMessage<'_>> {
        let oldest_first = self.messages.len().checked_sub(1)?.checked_sub(index)?;
        self.message(oldest_first)
    }
}

/// A message read from a [`ContextStore`].
#[derive(Debug, Clone, Copy)]
pub struct StoredMessage<'a> {
    role: Role,
    name: &'a str,
    blocks: &'a [BlockSlot],
    text: &'a str,
}

impl<'a> StoredMessage<'a> {
    /// The string of `len` bytes at `*at`, moving `*at` past it.
    fn take(&self, at: &mut usize, len: u32) -> &'a str {
        let start = *at;
        *at = start.saturating_add(len as usize);
        // Spans always lie on the arena's char boundaries; `get` keeps a
        // broken invariant from panicking.
        self.text.get(start..*at).unwrap_or("")
    }
}

impl Message for StoredMessage<'_> {
    fn role(&self) -> Role {
        self.role
    }

    fn name(&self) -> &str {
        self.name
    }

    fn block_count(&self) -> usize {
        self.blocks.len()
    }

    fn block(&self, index: usize) -> Option<Block<'_>> {
        let slot = self.blocks.get(index)?;
        let mut at = slot.start as usize;
        let at = &mut at;
        let [a, b, c] = slot.lens;
        Some(match slot.kind {
            Kind::Hint { has_source, created_at } => {
                let source = self.take(at, a);
                Block::Hint {
                    source: has_source.then_some(source),
                    text: HintText::Single(self.take(at, b)),
                    created_at: slot.created_at(created_at),
                }
            }
            Kind::ToolCall => Block::ToolCall {
                id: self.take(at, a),
                name: self.take(at, b),
                input: self.take(at, c),
            },
            Kind::ToolResult(state) => Block::ToolResult {
                id: self.take(at, a),
                name: self.take(at, b),
                state,
                output: self.take(at, c),
            },
            Kind::Text => Block::Text(self.take(at, a)),
            Kind::Other => Block::Other,
        })
    }
}

/// Bytes of strings `blocks` store; `None` on overflow.
fn text_len(blocks: &[Block<'_>]) -> Option<usize> {
    blocks.iter().try_fold(0usize, |total, block| {
        let len = match block {
            Block::Hint { source, text, .. } => text
                .parts()
                .iter()
                .try_fold(source.map_or(0, str::len), |n, p| n.checked_add(p.len()))?,
            Block::ToolCall { id, name, input } => {
                id.len().checked_add(name.len())?.checked_add(input.len())?
            }
            Block::ToolResult { id, name, output, .. } => {
                id.len().checked_add(name.len())?.checked_add(output.len())?
            }
            Block::Text(text) => text.len(),
            Block::Other => 0,
        };
        total.checked_add(len)
    })
}

/// The error for a message of `blocks` blocks and `text` bytes that does not
/// fit in an empty store.
fn too_large<const BLOCKS: usize, const TEXT: usize>(blocks: usize, text: usize) -> StoreError {
    if blocks > BLOCKS {
        StoreError::TooManyBlocks { needed: blocks, capacity: BLOCKS }
    } else {
        StoreError::TooMuchText { needed: text, capacity: TEXT }
    }
}

/// A length or position known to fit in a `u32` (checked by
/// [`ContextStore::new`]); saturates rather than panics.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::collections::VecDeque;
    use std::string::{String, ToString};
    use std::vec::Vec;
    use std::{format, vec};

    use proptest::prelude::*;

    use super::*;

    /// A block as the store reads it back, owned.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Owned {
        Hint { source: Option<String>, text: String },
        Call { id: String, name: String, input: String },
        Result { id: String, name: String, state: ToolResultState, output: String },
        Text(String),
        Other,
    }

    /// A message as the store reads it back, owned.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct OwnedMessage {
        role: Role,
        name: String,
        blocks: Vec<Owned>,
    }

    fn own(block: Block<'_>) -> Owned {
        match block {
            Block::Hint { source, text, .. } => {
                Owned::Hint { source: source.map(ToString::to_string), text: text.parts().concat() }
            }
            Block::ToolCall { id, name, input } => {
                Owned::Call { id: id.into(), name: name.into(), input: input.into() }
            }
            Block::ToolResult { id, name, state, output } => {
                Owned::Result { id: id.into(), name: name.into(), state, output: output.into() }
            }
            Block::Text(text) => Owned::Text(text.into()),
            Block::Other => Owned::Other,
        }
    }

    /// Everything a conversation holds, read through the trait, oldest first.
    fn snapshot<C: Conversation>(conversation: &C) -> Vec<OwnedMessage> {
        let count = conversation.message_count();
        assert!(conversation.newest(count).is_none());
        let mut out: Vec<OwnedMessage> = (0..count)
            .map(|i| {
                let m = conversation.newest(i).expect("message in range");
                assert!(m.block(m.block_count()).is_none());
                OwnedMessage {
                    role: m.role(),
                    name: m.name().into(),
                    blocks: (0..m.block_count())
                        .map(|b| own(m.block(b).expect("block in range")))
                        .collect(),
                }
            })
            .collect();
        out.reverse();
        out
    }

    fn names<C: Conversation>(conversation: &C) -> Vec<String> {
        snapshot(conversation).into_iter().map(|m| m.name).collect()
    }

    fn hint<'a>(text: &'a str) -> Block<'a> {
        Block::Hint { source: Some("runtime"), text: HintText::Single(text), created_at: None }
    }

    #[test]
    fn reads_back_newest_first() {
        let mut store: ContextStore<4, 8, 256> = ContextStore::new();
        assert!(store.is_empty());
        assert_eq!(store.newest(0).map(|m| m.role()), None);

        let parts = ["<current-time>", "2026-05-09 ", "", "12:00</current-time>"];
        store.push_message(Role::User, "user", &[Block::Other]).unwrap();
        store
            .push_message(
                Role::Assistant,
                "friday",
                &[
                    Block::Hint {
                        source: Some("runtime"),
                        text: HintText::Parts(&parts),
                        created_at: None,
                    },
                    Block::Hint { source: Some(""), text: HintText::Single("a"), created_at: None },
                    Block::Hint { source: None, text: HintText::Single("b"), created_at: None },
                    Block::ToolCall { id: "c1", name: "read", input: "{\"p\": \"é😀\"}" },
                    Block::ToolResult {
                        id: "c1",
                        name: "read",
                        state: ToolResultState::Denied,
                        output: "",
                    },
                ],
            )
            .unwrap();
        store.push_message(Role::System, "", &[]).unwrap();
        assert_eq!(store.len(), 3);

        let newest = store.newest(0).unwrap();
        assert_eq!((newest.role(), newest.name(), newest.block_count()), (Role::System, "", 0));
        let agent = store.newest(1).unwrap();
        assert_eq!((agent.role(), agent.name()), (Role::Assistant, "friday"));
        // A list hint is stored as the concatenation of its parts.
        match agent.block(0) {
            Some(Block::Hint { source: Some("runtime"), text: HintText::Single(t), .. }) => {
                assert_eq!(t, "<current-time>2026-05-09 12:00</current-time>")
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            snapshot(&store)[1].blocks[1..],
            [
                Owned::Hint { source: Some("".into()), text: "a".into() },
                Owned::Hint { source: None, text: "b".into() },
                Owned::Call {
                    id: "c1".into(),
                    name: "read".into(),
                    input: "{\"p\": \"é😀\"}".into()
                },
                Owned::Result {
                    id: "c1".into(),
                    name: "read".into(),
                    state: ToolResultState::Denied,
                    output: String::new()
                },
            ]
        );
        let user = store.newest(2).unwrap();
        assert_eq!((user.role(), user.name(), user.block_count()), (Role::User, "user", 1));
        assert!(matches!(user.block(0), Some(Block::Other)));
        assert!(store.newest(3).is_none());
        assert!(store.newest(usize::MAX).is_none());
        assert_eq!(store.blocks_used(), 6);
    }

    #[test]
    fn a_failed_write_is_cut_back_whole() {
        // The undo the write paths keep for a mistake in `plan`: cutting the
        // pools back to their lengths before a write removes all of it.
        let mut store: ContextStore<4, 8, 256> = ContextStore::new();
        store.push_message(Role::User, "user", &[hint("kept")]).unwrap();
        let before = snapshot(&store);
        let (messages, blocks, text) = store.lengths();
        store.push_message(Role::Assistant, "friday", &[hint("dropped"), Block::Other]).unwrap();
        store.append_blocks_to_last(&[hint("also dropped")]).unwrap();
        store.truncate(messages, blocks, text);
        assert_eq!(snapshot(&store), before);
        assert_eq!(store.lengths(), (messages, blocks, text));
    }

    #[test]
    fn message_capacity_evicts_oldest_first() {
        let mut store: ContextStore<3, 64, 1024> = ContextStore::new();
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            assert_eq!(
                store.push_message(Role::User, name, &[]),
                Ok(Appended { evicted: 0 }),
                "{i}"
            );
        }
        assert_eq!(store.push_message(Role::User, "d", &[]), Ok(Appended { evicted: 1 }));
        assert_eq!(store.push_message(Role::User, "e", &[]), Ok(Appended { evicted: 1 }));
        assert_eq!(names(&store), ["c", "d", "e"]);
        assert_eq!(store.evicted_total(), 2);
    }

    #[test]
    fn block_capacity_evicts_whole_messages() {
        let mut store: ContextStore<16, 5, 1024> = ContextStore::new();
        store.push_message(Role::User, "a", &[Block::Other, Block::Other]).unwrap();
        store.push_message(Role::User, "b", &[Block::Other]).unwrap();
        store.push_message(Role::User, "c", &[Block::Other, Block::Other]).unwrap();
        assert_eq!(store.blocks_used(), 5);
        // Two free blocks are needed: "a" alone frees them.
        assert_eq!(
            store.push_message(Role::User, "d", &[Block::Other, Block::Other]),
            Ok(Appended { evicted: 1 })
        );
        assert_eq!(names(&store), ["b", "c", "d"]);
        // Four are needed: "b" frees one, "c" two more.
        assert_eq!(
            store.push_message(Role::User, "e", &[Block::Other; 4]),
            Ok(Appended { evicted: 3 })
        );
        assert_eq!(names(&store), ["e"]);
        // A message without blocks evicts nothing.
        assert_eq!(store.push_message(Role::User, "f", &[]), Ok(Appended { evicted: 0 }));
    }

    #[test]
    fn text_capacity_evicts_and_moves_text() {
        let mut store: ContextStore<16, 16, 32> = ContextStore::new();
        // 4 + 7 + 8 bytes.
        store.push_message(Role::Assistant, "aaaa", &[hint("é😀é")]).unwrap();
        let result =
            Block::ToolResult { id: "1", name: "t", state: ToolResultState::Error, output: "" };
        store.push_message(Role::Assistant, "b", &[result]).unwrap();
        assert_eq!(store.text_used(), 22);
        let call = Block::ToolCall { id: "", name: "", input: "0123456789😀" };
        // 1 + 14 bytes: "aaaa" must go.
        assert_eq!(store.push_message(Role::Assistant, "c", &[call]), Ok(Appended { evicted: 1 }));
        assert_eq!(store.text_used(), 18);
        assert_eq!(
            snapshot(&store),
            [
                OwnedMessage { role: Role::Assistant, name: "b".into(), blocks: vec![own(result)] },
                OwnedMessage { role: Role::Assistant, name: "c".into(), blocks: vec![own(call)] },
            ]
        );
        // Exactly full is full, not over.
        assert_eq!(
            store.push_message(Role::User, "", &[hint("0123456")]),
            Ok(Appended { evicted: 0 })
        );
        assert_eq!(store.text_used(), 32);
    }

    #[test]
    fn append_to_last_evicts_older_messages_only() {
        let mut store: ContextStore<8, 4, 64> = ContextStore::new();
        assert_eq!(store.append_blocks_to_last(&[Block::Other]), Err(StoreError::Empty));
        store.push_message(Role::User, "user", &[Block::Other]).unwrap();
        store.push_message(Role::Assistant, "friday", &[Block::Other]).unwrap();
        assert_eq!(store.append_blocks_to_last(&[]), Ok(Appended { evicted: 0 }));
        assert_eq!(store.append_blocks_to_last(&[Block::Other]), Ok(Appended { evicted: 0 }));
        let result =
            Block::ToolResult { id: "c1", name: "t", state: ToolResultState::Error, output: "" };
        assert_eq!(
            store.append_blocks_to_last(&[result, Block::Other]),
            Ok(Appended { evicted: 1 })
        );
        assert_eq!(names(&store), ["friday"]);
        let last = store.newest(0).unwrap();
        assert_eq!(last.block_count(), 4);
        assert_eq!(own(last.block(2).unwrap()), own(result));
        // The newest message alone would outgrow the store: refused.
        let before = snapshot(&store);
        assert_eq!(
            store.append_blocks_to_last(&[Block::Other]),
            Err(StoreError::TooManyBlocks { needed: 5, capacity: 4 })
        );
        assert_eq!(snapshot(&store), before);
        assert_eq!(store.evicted_total(), 1);

        // Text too: "friday" + "c1" + "t" is 9 bytes, the hint 7 + 49 more.
        let long = "x".repeat(49);
        let mut small: ContextStore<8, 8, 64> = ContextStore::new();
        small.push_message(Role::User, "u", &[]).unwrap();
        small.push_message(Role::Assistant, "friday", &[result]).unwrap();
        assert_eq!(
            small.append_blocks_to_last(&[hint(&long)]),
            Err(StoreError::TooMuchText { needed: 65, capacity: 64 })
        );
        assert_eq!(small.len(), 2);
        assert_eq!(small.append_blocks_to_last(&[hint(&long[1..])]), Ok(Appended { evicted: 1 }));
        assert_eq!(small.text_used(), 64);
    }

    #[test]
    fn oversized_message_is_refused_and_store_unchanged() {
        let mut store: ContextStore<4, 3, 16> = ContextStore::new();
        store.push_message(Role::User, "a", &[Block::Other]).unwrap();
        store.push_message(Role::Assistant, "b", &[hint("x")]).unwrap();
        let before = snapshot(&store);
        let (blocks, text) = (store.blocks_used(), store.text_used());

        let err = store.push_message(Role::User, "c", &[Block::Other; 4]).unwrap_err();
        assert_eq!(err, StoreError::TooManyBlocks { needed: 4, capacity: 3 });
        assert_eq!(err.to_string(), "the message needs 4 blocks but the store holds 3");
        let err = store.push_message(Role::User, "0123456789abcdef!", &[]).unwrap_err();
        assert_eq!(err, StoreError::TooMuchText { needed: 17, capacity: 16 });
        assert_eq!(err.to_string(), "the message needs 17 bytes of text but the store holds 16");
        // Hint parts count in full, source included.
        let parts = ["abc", "def"];
        let err = store
            .push_message(
                Role::User,
                "",
                &[Block::Hint {
                    source: Some("0123456789a"),
                    text: HintText::Parts(&parts),
                    created_at: None,
                }],
            )
            .unwrap_err();
        assert_eq!(err, StoreError::TooMuchText { needed: 17, capacity: 16 });
        assert_eq!(StoreError::Empty.to_string(), "the store holds no message to append to");

        assert_eq!(snapshot(&store), before);
        assert_eq!((store.blocks_used(), store.text_used()), (blocks, text));
        assert_eq!(store.evicted_total(), 0);
        // A message that exactly fills an empty store is accepted.
        assert_eq!(
            store.push_message(Role::User, "0123456789abcdef", &[Block::Other; 3]),
            Ok(Appended { evicted: 2 })
        );
    }

    #[test]
    fn compact_clear_and_counters() {
        let mut store: ContextStore<8, 8, 64> = ContextStore::new();
        for name in ["a", "b", "c", "d", "e"] {
            store.push_message(Role::User, name, &[Block::Other]).unwrap();
        }
        assert_eq!(store.compact(10), 0);
        assert_eq!(store.compact(2), 3);
        assert_eq!(names(&store), ["d", "e"]);
        assert_eq!((store.len(), store.blocks_used(), store.text_used()), (2, 2, 2));
        assert_eq!(store.evicted_total(), 3);
        assert_eq!(store.compact(0), 2);
        assert!(store.is_empty());
        assert_eq!((store.blocks_used(), store.text_used(), store.evicted_total()), (0, 0, 5));
        store.push_message(Role::User, "f", &[]).unwrap();
        store.clear();
        assert!(store.is_empty());
        assert_eq!((store.blocks_used(), store.text_used(), store.evicted_total()), (0, 0, 0));
        assert_eq!(ContextStore::<8, 8, 64>::MESSAGE_CAPACITY, 8);
        assert_eq!(ContextStore::<8, 8, 64>::TEXT_CAPACITY, 64);
        assert_eq!(ContextStore::<8, 7, 64>::BLOCK_CAPACITY, 7);
        // `new` is const: a store can be a static.
        static STORE: ContextStore<2, 2, 2> = ContextStore::new();
        assert!(STORE.is_empty());
        assert!(ContextStore::<1, 0, 0>::default().is_empty());
    }

    /// Stand-in for the time rule's detection: the newest assistant hint
    /// from the injection source that records a time.
    fn recorded_time<C: Conversation>(conversation: &C) -> Option<String> {
        (0..conversation.message_count())
            .filter_map(|i| conversation.newest(i))
            .filter(|m| m.role() == Role::Assistant)
            .find_map(|m| {
                (0..m.block_count()).rev().find_map(|b| match m.block(b) {
                    Some(Block::Hint { source: Some("runtime"), text, .. }) => {
                        let text = text.parts().concat();
                        text.contains("<current-time>").then_some(text)
                    }
                    _ => None,
                })
            })
    }

    #[test]
    fn evicting_the_time_injection_forgets_the_time() {
        let mut store: ContextStore<4, 16, 512> = ContextStore::new();
        store.push_message(Role::User, "user", &[Block::Other]).unwrap();
        let injection = "<current-time>2026-05-09 12:00:00</current-time>";
        store
            .push_message(
                Role::Assistant,
                "friday",
                &[hint(injection), Block::ToolCall { id: "c1", name: "read", input: "{}" }],
            )
            .unwrap();
        store
            .append_blocks_to_last(&[Block::ToolResult {
                id: "c1",
                name: "read",
                state: ToolResultState::Success,
                output: "",
            }])
            .unwrap();
        assert_eq!(recorded_time(&store).as_deref(), Some(injection));

        // Later steps carry no time; the store fills and compresses.
        let mut evicted = 0;
        for step in 0..4 {
            let id = format!("c{step}");
            let done = store
                .push_message(
                    Role::Assistant,
                    "friday",
                    &[Block::ToolCall { id: &id, name: "read", input: "{}" }],
                )
                .unwrap();
            evicted += done.evicted;
        }
        assert_eq!(evicted, 2);
        assert_eq!(store.len(), 4);
        // The injection went with its message: the rules inject the time again.
        assert_eq!(recorded_time(&store), None);
        for i in 0..store.len() {
            let m = store.newest(i).unwrap();
            for b in 0..m.block_count() {
                if let Some(Block::Hint { text, .. }) = m.block(b) {
                    assert!(!text.parts().concat().contains("<current-time>"));
                }
            }
        }
    }

    #[test]
    fn memory_cost_follows_the_formula() {
        fn expected(m: usize, b: usize, t: usize) -> usize {
            let w = size_of::<usize>();
            let up = |n: usize, a: usize| n.div_ceil(a) * a;
            // Vec<MessageSlot>, Vec<BlockSlot>, String, the u32 counter.
            up(up(16 * m + w, w) + up(24 * b + w, w) + up(t + w, w) + 4, w)
        }
        assert_eq!(size_of::<MessageSlot>(), 16);
        assert_eq!(size_of::<BlockSlot>(), 24);
        assert_eq!(size_of::<ContextStore<1, 0, 0>>(), expected(1, 0, 0));
        assert_eq!(size_of::<ContextStore<8, 32, 2048>>(), expected(8, 32, 2048));
        assert_eq!(size_of::<ContextStore<3, 5, 7>>(), expected(3, 5, 7));
        assert_eq!(size_of::<ContextStore<64, 255, 16001>>(), expected(64, 255, 16001));
    }

    // ----- Model-based property test -----

    /// A block as pushed: hints may come in parts.
    #[derive(Debug, Clone)]
    enum In {
        Hint { source: Option<String>, parts: Vec<String> },
        Call { id: String, name: String, input: String },
        Result { id: String, name: String, state: ToolResultState, output: String },
        Text(String),
        Other,
    }

    impl In {
        fn stored(&self) -> Owned {
            match self {
                In::Hint { source, parts } => {
                    Owned::Hint { source: source.clone(), text: parts.concat() }
                }
                In::Call { id, name, input } => {
                    Owned::Call { id: id.clone(), name: name.clone(), input: input.clone() }
                }
                In::Result { id, name, state, output } => Owned::Result {
                    id: id.clone(),
                    name: name.clone(),
                    state: *state,
                    output: output.clone(),
                },
                In::Text(text) => Owned::Text(text.clone()),
                In::Other => Owned::Other,
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push { role: Role, name: String, blocks: Vec<In> },
        Append(Vec<In>),
        Compact(usize),
        Clear,
    }

    /// Borrows `blocks` as the trait's blocks and runs `f` on them.
    fn with_blocks<R>(blocks: &[In], f: impl FnOnce(&[Block<'_>]) -> R) -> R {
        let parts: Vec<Vec<&str>> = blocks
            .iter()
            .map(|b| match b {
                In::Hint { parts, .. } => parts.iter().map(String::as_str).collect(),
                _ => Vec::new(),
            })
            .collect();
        let borrowed: Vec<Block<'_>> = blocks
            .iter()
            .zip(&parts)
            .map(|(b, p)| match b {
                In::Hint { source, parts } if parts.len() == 1 && p.len() == 1 => Block::Hint {
                    source: source.as_deref(),
                    text: HintText::Single(&parts[0]),
                    created_at: None,
                },
                In::Hint { source, .. } => Block::Hint {
                    source: source.as_deref(),
                    text: HintText::Parts(p),
                    created_at: None,
                },
                In::Call { id, name, input } => Block::ToolCall { id, name, input },
                In::Result { id, name, state, output } => {
                    Block::ToolResult { id, name, state: *state, output }
                }
                In::Text(text) => Block::Text(text),
                In::Other => Block::Other,
            })
            .collect();
        f(&borrowed)
    }

    /// The reference: a deque of the newest messages that fit.
    struct Model {
        messages: VecDeque<OwnedMessage>,
        evicted_total: u32,
        capacity: (usize, usize, usize),
    }

    fn message_text(m: &OwnedMessage) -> usize {
        m.name.len()
            + m.blocks
                .iter()
                .map(|b| match b {
                    Owned::Hint { source, text } => {
                        source.as_ref().map_or(0, String::len) + text.len()
                    }
                    Owned::Call { id, name, input } => id.len() + name.len() + input.len(),
                    Owned::Result { id, name, output, .. } => id.len() + name.len() + output.len(),
                    Owned::Text(text) => text.len(),
                    Owned::Other => 0,
                })
                .sum::<usize>()
    }

    impl Model {
        fn over(&self) -> bool {
            let (m, b, t) = self.capacity;
            self.messages.len() > m
                || self.messages.iter().map(|m| m.blocks.len()).sum::<usize>() > b
                || self.messages.iter().map(message_text).sum::<usize>() > t
        }

        fn check(&self, message: &OwnedMessage) -> Result<(), StoreError> {
            let (_, b, t) = self.capacity;
            if message.blocks.len() > b {
                return Err(StoreError::TooManyBlocks {
                    needed: message.blocks.len(),
                    capacity: b,
                });
            }
            if message_text(message) > t {
                return Err(StoreError::TooMuchText { needed: message_text(message), capacity: t });
            }
            Ok(())
        }

        fn evict_to_fit(&mut self) -> usize {
            let mut evicted = 0;
            while self.over() {
                self.messages.pop_front();
                evicted += 1;
            }
            self.evicted_total += evicted as u32;
            evicted
        }

        fn apply(&mut self, op: &Op) -> Result<Appended, StoreError> {
            match op {
                Op::Push { role, name, blocks } => {
                    let message = OwnedMessage {
                        role: *role,
                        name: name.clone(),
                        blocks: blocks.iter().map(In::stored).collect(),
                    };
                    self.check(&message)?;
                    self.messages.push_back(message);
                    Ok(Appended { evicted: self.evict_to_fit() })
                }
                Op::Append(blocks) => {
                    let mut grown = self.messages.back().ok_or(StoreError::Empty)?.clone();
                    grown.blocks.extend(blocks.iter().map(In::stored));
                    self.check(&grown)?;
                    *self.messages.back_mut().unwrap() = grown;
                    Ok(Appended { evicted: self.evict_to_fit() })
                }
                Op::Compact(keep) => {
                    let evicted = self.messages.len().saturating_sub(*keep);
                    self.messages.drain(..evicted);
                    self.evicted_total += evicted as u32;
                    Ok(Appended { evicted })
                }
                Op::Clear => {
                    self.messages.clear();
                    self.evicted_total = 0;
                    Ok(Appended { evicted: 0 })
                }
            }
        }
    }

    fn run<const M: usize, const B: usize, const T: usize>(
        ops: &[Op],
    ) -> Result<(), TestCaseError> {
        let mut store: ContextStore<M, B, T> = ContextStore::new();
        let mut model = Model { messages: VecDeque::new(), evicted_total: 0, capacity: (M, B, T) };
        for op in ops {
            let expected = model.apply(op);
            let before = snapshot(&store);
            let got = match op {
                Op::Push { role, name, blocks } => {
                    with_blocks(blocks, |b| store.push_message(*role, name, b))
                }
                Op::Append(blocks) => with_blocks(blocks, |b| store.append_blocks_to_last(b)),
                Op::Compact(keep) => Ok(Appended { evicted: store.compact(*keep) }),
                Op::Clear => {
                    store.clear();
                    Ok(Appended { evicted: 0 })
                }
            };
            prop_assert_eq!(got, expected, "{:?}", op);
            let after = snapshot(&store);
            if got.is_err() {
                prop_assert_eq!(&after, &before);
            }
            prop_assert_eq!(&after, &Vec::from(model.messages.clone()));
            prop_assert_eq!(store.evicted_total(), model.evicted_total);
            prop_assert_eq!(
                store.blocks_used(),
                after.iter().map(|m| m.blocks.len()).sum::<usize>()
            );
            prop_assert_eq!(store.text_used(), after.iter().map(message_text).sum::<usize>());
            prop_assert!(store.len() <= M && store.blocks_used() <= B && store.text_used() <= T);
        }
        Ok(())
    }

    fn text() -> impl Strategy<Value = String> {
        "[ab<>é😀]{0,5}"
    }

    fn state() -> impl Strategy<Value = ToolResultState> {
        prop_oneof![
            Just(ToolResultState::Success),
            Just(ToolResultState::Error),
            Just(ToolResultState::Interrupted),
            Just(ToolResultState::Denied),
            Just(ToolResultState::Running),
        ]
    }

    fn block() -> impl Strategy<Value = In> {
        prop_oneof![
            (proptest::option::of(text()), proptest::collection::vec(text(), 0..4))
                .prop_map(|(source, parts)| In::Hint { source, parts }),
            (text(), text(), text()).prop_map(|(id, name, input)| In::Call { id, name, input }),
            (text(), text(), state(), text()).prop_map(|(id, name, state, output)| In::Result {
                id,
                name,
                state,
                output
            }),
            text().prop_map(In::Text),
            Just(In::Other),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        let role = prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::System)];
        let blocks = || proptest::collection::vec(block(), 0..5);
        prop_oneof![
            6 => (role, text(), blocks()).prop_map(|(role, name, blocks)| Op::Push { role, name, blocks }),
            3 => blocks().prop_map(Op::Append),
            1 => (0usize..5).prop_map(Op::Compact),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn matches_model_small(ops in proptest::collection::vec(op(), 0..40)) {
            run::<4, 6, 40>(&ops)?;
        }

        #[test]
        fn matches_model_one_message(ops in proptest::collection::vec(op(), 0..40)) {
            run::<1, 3, 16>(&ops)?;
        }

        #[test]
        fn matches_model_roomy(ops in proptest::collection::vec(op(), 0..60)) {
            run::<8, 24, 160>(&ops)?;
        }

        #[test]
        fn matches_model_no_blocks_no_text(ops in proptest::collection::vec(op(), 0..20)) {
            run::<2, 0, 0>(&ops)?;
        }
    }
}
