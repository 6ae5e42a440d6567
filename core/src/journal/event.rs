//! What a log item holds: the events a session records ([`Event`]), a
//! step's record ([`StepRecord`]: its inputs where they changed, its
//! decision and the live values it told, never its hint's text), and the
//! header ([`LogHeader`]).

use core::fmt;

use siphasher::sip::SipHasher13;

use super::*;
use crate::clock::Timestamp;
use crate::config::watch::{WatchList, MAX_WATCHES};
use crate::conversation::{Block, Role, ToolResultState};
use crate::rules::watch::WatchSet;
use crate::rules::{ContextLength, TaskCounts, TimeDecision, ToolError};

/// One event of a session that changes its context: what
/// [`Session::record`] logs and applies.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// `user`: a user's message, which starts a new reply
    /// ([`AgentContext::user`], or with its text `AgentContext::observe`
    /// of a user text block).
    User {
        /// The sender.
        name: &'a str,
        /// What the user said (sent in a model request; the rules never
        /// read it); `""` keeps none, as [`AgentContext::user`].
        text: &'a str,
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
}

/// What an item is: its first byte (docs/reboot.md, "The items").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ItemKind {
    /// The header: version, configuration, the items before it still needed.
    Header,
    /// [`Event::User`].
    User,
    /// [`Event::Message`].
    Message,
    /// [`Event::Assistant`].
    Assistant,
    /// [`Event::ToolCall`].
    ToolCall,
    /// [`Event::ToolResult`].
    ToolResult,
    /// [`Event::Reply`].
    Reply,
    /// [`Event::Compress`].
    Compress,
    /// A step: [`StepRecord`].
    Step,
}

impl ItemKind {
    pub(crate) const ALL: [ItemKind; 9] = [
        ItemKind::Header,
        ItemKind::User,
        ItemKind::Message,
        ItemKind::Assistant,
        ItemKind::ToolCall,
        ItemKind::ToolResult,
        ItemKind::Reply,
        ItemKind::Compress,
        ItemKind::Step,
    ];

    /// The item's first byte.
    pub(crate) fn byte(self) -> u8 {
        self as u8 + 1
    }

    /// The kind a first byte names.
    pub(crate) fn of(byte: u8) -> Option<ItemKind> {
        ItemKind::ALL.get(usize::from(byte).checked_sub(1)?).copied()
    }

    /// Its name in the replay trace format (`"log"`, `"user"`, `"step"`, …).
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Header => "log",
            ItemKind::User => "user",
            ItemKind::Message => "message",
            ItemKind::Assistant => "assistant",
            ItemKind::ToolCall => "tool_call",
            ItemKind::ToolResult => "tool_result",
            ItemKind::Reply => "reply",
            ItemKind::Compress => "compress",
            ItemKind::Step => "step",
        }
    }
}

impl Event<'_> {
    pub(crate) fn kind(&self) -> ItemKind {
        match self {
            Event::User { .. } => ItemKind::User,
            Event::Message { .. } => ItemKind::Message,
            Event::Assistant(_) => ItemKind::Assistant,
            Event::ToolCall { .. } => ItemKind::ToolCall,
            Event::ToolResult { .. } => ItemKind::ToolResult,
            Event::Reply => ItemKind::Reply,
            Event::Compress { .. } => ItemKind::Compress,
        }
    }
}

/// What one item holds, read back ([`decode`]).
// A step is the largest (its told fields, borrowed): no heap to box it in,
// and an entry lives on the stack only while its item is applied.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Entry<'a> {
    /// The log's header.
    Header(LogHeader<'a>),
    /// An event.
    Event(Event<'a>),
    /// A step.
    Step(StepRecord<'a>),
}

/// A header item: what the log is written for, and where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogHeader<'a> {
    /// Version, configuration hash, capacities.
    pub header: Header,
    /// The header's own item number (every other item carries its low 16
    /// bits; a reader counts the rest from here).
    pub number: u32,
    /// Items before this one that the context still needs.
    pub live: u32,
    /// The agent whose context it is.
    pub agent: &'a str,
    /// Steps the session took before this header, also those a
    /// compaction popped.
    pub steps: u64,
    /// The configuration the log was written under, as the session
    /// configuration file's JSON (`ConfigBuf::load_session` and
    /// `envaware-sim replay` read it); `None` when the header does not
    /// carry it.
    pub settings: Option<&'a str>,
}

/// How a step's clock moved from the one the log said before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClockChange {
    /// As the log said last (or, after a header, unknown until said).
    #[default]
    Same,
    /// Moved by this many microseconds from the clock said last.
    Advance(i64),
    /// Set to this instant.
    Set(Timestamp),
    /// The clock does not know the time.
    Unknown,
}

/// The values a step's watches read, by watch index (the configuration's
/// order): `None` where the step's live fields had no field of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WatchReadings<'a> {
    values: [Option<&'a str>; MAX_WATCHES],
}

impl<'a> WatchReadings<'a> {
    /// The reading of watch `i`.
    pub fn get(&self, i: usize) -> Option<&'a str> {
        self.values.get(i).copied().flatten()
    }

    /// The watched fields' values in `live`, as the watch rule reads them
    /// (the last field of each name).
    pub(crate) fn of<L: LiveFields + ?Sized>(watches: &WatchList<'_>, live: &'a L) -> Self {
        let mut values = [None; MAX_WATCHES];
        for (slot, (name, _)) in values.iter_mut().zip(watches.iter()) {
            let field =
                (0..live.len()).rev().find_map(|i| live.field(i).filter(|(k, _)| *k == name));
            *slot = field.map(|(_, value)| value);
        }
        WatchReadings { values }
    }

    pub(crate) fn set(&mut self, i: usize, value: Option<&'a str>) {
        if let Some(slot) = self.values.get_mut(i) {
            *slot = value;
        }
    }

    /// The hash by which the log writes them again only when they change.
    pub(crate) fn hash(&self) -> u64 {
        let mut hasher = SipHasher13::new();
        for value in self.values {
            match value {
                None => hasher.write_u8(0),
                Some(v) => {
                    hasher.write_u8(1);
                    hasher.write_usize(v.len());
                    hasher.write(v.as_bytes());
                }
            }
        }
        hasher.finish()
    }
}

/// The most live fields a step can tell: a restore holds them on its stack.
pub const MAX_TOLD_FIELDS: usize = 8;

/// The live fields a step's hint told, in order (as the step's
/// [`LiveFields`] gave them when it rendered): what a restore renders the
/// hint with again.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Told<'a> {
    fields: [(&'a str, &'a str); MAX_TOLD_FIELDS],
    len: usize,
}

impl fmt::Debug for Told<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.fields.iter().take(self.len)).finish()
    }
}

impl<'a> Told<'a> {
    pub(crate) fn push(&mut self, name: &'a str, value: &'a str) -> Result<(), ItemError> {
        let slot = self.fields.get_mut(self.len).ok_or(ItemError::Field("told"))?;
        *slot = (name, value);
        self.len += 1;
        Ok(())
    }
}

impl LiveFields for Told<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        self.fields.get(i).filter(|_| i < self.len).copied()
    }
}

/// What a step decided, as its item records it: the dimensions that fired
/// and the counts its hint shows, and why each watch fired or was held
/// back. With the step's inputs and the live values it told, a restore
/// renders the very hint the step appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Decided {
    /// The time was injected (at the step's instant).
    pub time: bool,
    /// The tasks were told (the step's counts).
    pub tasks: bool,
    /// The context length was told: `int(trigger_ratio * context_size)`,
    /// and whether compressing was suggested (the input tokens are the step's).
    pub context: Option<(i64, bool)>,
    /// The tool error: its count, and the failed result's block in the
    /// newest message (its tool is the hint's `{tool_name}`).
    pub tool_error: Option<ToolError>,
    /// Why each watch fired, or was held back by `min_interval`.
    pub watch: WatchSet,
}

impl Decided {
    /// What `decision` has to say; `None` when nothing fired and no watch
    /// was held back (then the step item records no decision).
    pub fn of(decision: &Decision) -> Option<Decided> {
        let watch = decision.watch;
        let decided = Decided {
            time: matches!(decision.time, TimeDecision::Inject(_)),
            tasks: decision.tasks.is_some(),
            context: decision.context.map(|c| (c.trigger_tokens, c.suggest_compression)),
            tool_error: decision.tool_error,
            watch,
        };
        let throttled = watch.bits()[2] != 0;
        (decision.fires() || throttled).then_some(decided)
    }

    /// Whether it fired: a hint was appended.
    pub fn fires(&self) -> bool {
        self.time
            || self.tasks
            || self.context.is_some()
            || self.tool_error.is_some()
            || !self.watch.is_empty()
    }

    /// The decision it records, for a step of `input` at `now` (what the
    /// hint is rendered from; its warnings are not recorded). `None`
    /// records no decision: nothing fired.
    pub fn decision(
        decided: Option<Decided>,
        input: &StepInput,
        now: Option<Timestamp>,
    ) -> Decision {
        let Some(d) = decided else { return Decision { now, ..Decision::NONE } };
        Decision {
            time: match (d.time, now) {
                (true, Some(now)) => TimeDecision::Inject(now),
                _ => TimeDecision::NotDue,
            },
            tasks: d.tasks.then_some(input.tasks),
            context: d.context.map(|(trigger_tokens, suggest_compression)| ContextLength {
                input_tokens: input.input_tokens,
                trigger_tokens,
                suggest_compression,
            }),
            tool_error: d.tool_error,
            watch: d.watch,
            warnings: Decision::NONE.warnings,
            now,
        }
    }
}

/// A step item: the step's inputs where they changed since the log said
/// them, the values its watches read where they changed, its decision and
/// the live values its hint told. Not its hint: a restore renders that
/// again from these (docs/reboot.md, "Steps").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StepRecord<'a> {
    /// How the clock moved.
    pub clock: ClockChange,
    /// The step's `cur_iter`; `None`: the one the replay assumes (0 after
    /// a user message or a reply, one more than the last step's else).
    pub cur_iter: Option<u64>,
    /// The input tokens; `None`: the last step's.
    pub tokens: Option<i64>,
    /// The plan's counts; `None`: the last step's.
    pub tasks: Option<TaskCounts>,
    /// The model's context window; `None`: the last step's.
    pub context_size: Option<i64>,
    /// The watched values decided on; `None`: the last step's.
    pub readings: Option<WatchReadings<'a>>,
    /// What fired; `None`: nothing fired and no watch was held back.
    pub decided: Option<Decided>,
    /// The live values the hint told (empty when nothing fired).
    pub told: Told<'a>,
    /// The outbox's mark, as the items before this one not yet delivered
    /// (its number minus the mark; [`ItemStore::delivered`]); `None`: as
    /// the log said last.
    ///
    /// [`ItemStore::delivered`]: crate::journal::ItemStore::delivered
    pub undelivered: Option<u32>,
}

/// The low 16 bits of an item's number and what the item holds: the
/// item read on its own, with the watch list of the configuration it was
/// written under (a told value names its watched field by its index), its
/// blocks into `blocks`.
///
/// ```
/// use envaware::journal::{decode, Entry, Event, ItemStore, Session, MAX_EVENT_BLOCKS};
/// use envaware::{Block, Config, Engine};
/// # struct Items(Vec<Vec<u8>>);
/// # impl ItemStore for Items {
/// #     type Error = core::convert::Infallible;
/// #     async fn append(&mut self, item: &[u8]) -> Result<(), Self::Error> {
/// #         self.0.push(item.to_vec());
/// #         Ok(())
/// #     }
/// # }
/// let engine = Engine::new(Config::default())?;
/// let (mut buf, mut log) = ([0u8; 256], Items(Vec::new()));
/// let mut session: Session<'_, 8, 32, 2048> = Session::new(&engine, "rover");
/// embassy_futures::block_on(session.start(&mut buf, &mut log))?;
/// let event = Event::ToolCall { id: "c1", name: "Drive", input: "{}" };
/// embassy_futures::block_on(session.record(&event, &mut buf, &mut log))?;
///
/// let watches = engine.config().config().injection.watch;
/// let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
/// let (seq, entry) = decode(&log.0[1], &watches, &mut blocks)?;
/// assert_eq!(seq, 1);
/// assert!(matches!(entry, Entry::Event(Event::ToolCall { name: "Drive", .. })));
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
///
/// # Errors
///
/// A damaged item, an item of the text form (format versions 1 and 2), or
/// one that names a watch the configuration does not have.
pub fn decode<'a: 'b, 'b>(
    item: &'a [u8],
    watches: &WatchList<'a>,
    blocks: &'b mut [Block<'a>; MAX_EVENT_BLOCKS],
) -> Result<(u16, Entry<'b>), ItemError> {
    read_entry(item, watches, blocks)
}
