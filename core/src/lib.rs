#![doc = include_str!("../README.md")]
//!
//! ## Where each rule lives
//!
//! The types a user needs are at the crate root; the modules behind them are
//! private, except [`args`] (tool-argument equality, for callers who compare
//! arguments themselves) and `wire` (feature `wire`: AgentScope JSON output).
//! The crate reads in layers, one private module each: `config` (the two
//! configurations and their validation) and `load` (JSON with pydantic's lax
//! coercions), `clock`, `time` (Python-exact strftime/strptime over
//! chrono-tz, with `zone_rules` past 2099 and `iana` for zones a build left
//! out), `conversation` (how the rules read a context) and `store` (a
//! fixed-capacity context), `json` and `args` (tool-argument equality),
//! `rules` (the four dimensions), `render` (the hint text), `engine` (one
//! call per step), `tracker` (the same decisions in constant time per step),
//! `tracked` (a store and its tracker in one), `live` (live readings) and
//! `watch` (environment-change triggers, envaware's own).
//!
//! | dimension | decided in | by |
//! |---|---|---|
//! | time | `rules` | `read_time_hint` (what a recorded hint says), `time_due` (compared with now) |
//! | tasks | `rules` | `marks` (task tool calls and tasks hints, scanned or tracked) |
//! | context length | `rules` | `context_length` |
//! | tool error | `rules` | `tool_error` (arguments compared by `args::argument_key`): a [`ToolError`] with the count and the failing result's position, whose name [`ToolError::tool_name`] reads |
//! | watch (envaware's own) | `watch` | `told_in` (what a hint told of a field), `Watch::fires` (compared with the reading), called by `rules` and the tracker |
//! | the hint text | `render` | `render` (template, fields, live values; the tool name from the [`ToolError`]) |
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations, unused_qualifications, rustdoc::broken_intra_doc_links)]

#[cfg(test)]
extern crate std;

pub mod args;
mod clock;
mod config;
mod conversation;
mod engine;
mod iana;
mod json;
mod live;
mod load;
#[cfg(test)]
mod reference;
mod render;
mod rules;
mod store;
mod text;
mod time;
mod tracked;
mod tracker;
mod watch;
#[cfg(feature = "wire")]
pub mod wire;
mod zone_rules;

pub use clock::{Clock, EpochTickClock, FixedClock, Timestamp};
pub use config::{
    Config, ConfigError, ContextConfig, Field, FieldList, InjectionConfig, Span, StrList, ValidConfig, Warning, ZoneName,
    DEFAULT_INJECTION_SOURCE, DEFAULT_TASK_TOOL_NAMES, DEFAULT_TEMPLATE, DEFAULT_TIME_FORMAT, DEFAULT_TOOL_RETRIES_HINT,
    RUNTIME_STATE_PLACEHOLDER,
};
pub use conversation::{Block, Conversation, HintText, Message, Role, SliceConversation, SliceMessage, ToolResultState};
pub use engine::{Engine, Outcome};
pub use live::{LiveReadings, UNAVAILABLE};
pub use load::{ConfigBuf, LoadError};
pub use render::{HintTooLong, LiveFields};
pub use rules::{ContextLength, Decision, Step, TaskCounts, TimeDecision, TimeSkipped, ToolError, Warnings};
pub use store::{Appended, ContextStore, StoreError, StoredMessage};
pub use time::{resolve_zone, TimeFormatError, Zone};
pub use tracked::{StepError, TrackedContext};
pub use tracker::Tracker;
pub use watch::{Decimal, Watch, WatchError, WatchList, WatchParam, WatchPath, WatchProblem, WatchSet, MAX_WATCHES, MAX_WATCH_NAME};
