//! The events of a session, as log items hold them.

use core::fmt;

use siphasher::sip::SipHasher13;

use super::*;
use crate::clock::Timestamp;
use crate::conversation::{Block, Role, ToolResultState};
use crate::json::{Kind, Value};
use crate::rules::TaskCounts;

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
        /// The configuration the log is written under (`settings`: the
        /// session configuration file's `injection_config` and
        /// `context_config`, the fields that differ from the defaults), so
        /// that a replay needs no other file; `None` leaves it out.
        settings: Option<&'a Config<'a>>,
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
        /// The hint's `created_at`: the step's instant, written with a hint
        /// (a compaction may pop the `set_clock` before it). Read back as
        /// the clock the log set last when absent.
        at: Option<Timestamp>,
    },
}

impl Event<'_> {
    /// The event's name: a clock moved from the one the log last set is
    /// written as an `advance`, shorter than a new `set_clock`.
    pub(crate) fn key(&self, said: &Said) -> &'static str {
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
    pub(crate) fields: Option<&'a dyn LiveFields>,
    pub(crate) hash: u64,
}

impl fmt::Debug for Readings<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readings").field("hash", &self.hash).finish_non_exhaustive()
    }
}

impl<'a> Readings<'a> {
    pub(crate) fn of(fields: &'a dyn LiveFields) -> Self {
        let mut hasher = SipHasher13::new();
        for (name, value) in (0..fields.len()).filter_map(|i| fields.field(i)) {
            hash_code_points(&mut hasher, name.chars().map(u32::from));
            hash_code_points(&mut hasher, value.chars().map(u32::from));
        }
        Readings { fields: Some(fields), hash: hasher.finish() }
    }

    /// The hash of a `read` item's value, as [`of`](Self::of) hashes the
    /// fields that wrote it (strings decoded; `null` is unavailable).
    pub(crate) fn read(value: Value<'_>) -> Result<Self, ItemError> {
        if value.kind() != Kind::Object {
            return Err(ItemError::Field("read"));
        }
        let mut hasher = SipHasher13::new();
        for (name, reading) in value.members() {
            hash_code_points(&mut hasher, name.code_points());
            match (reading.kind(), reading.as_str()) {
                (_, Some(text)) => hash_code_points(&mut hasher, text.code_points()),
                (Kind::Null, _) => {
                    hash_code_points(&mut hasher, crate::live::UNAVAILABLE.chars().map(u32::from))
                }
                _ => return Err(ItemError::Field("read")),
            }
        }
        Ok(Readings { fields: None, hash: hasher.finish() })
    }
}

/// One text into a readings hash, closed by a value no code point has.
pub(crate) fn hash_code_points(h: &mut SipHasher13, text: impl Iterator<Item = u32>) {
    for c in text {
        h.write_u32(c);
    }
    h.write_u32(u32::MAX);
}

/// `L` behind a sized reference, so that a step's fields, of any type,
/// can be an `&dyn LiveFields` in its `read` item.
pub(crate) struct Live<'a, L: ?Sized>(pub(crate) &'a L);

impl<L: LiveFields + ?Sized> LiveFields for Live<'_, L> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        self.0.field(i)
    }
}
