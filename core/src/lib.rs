#![doc = include_str!("../README.md")]
//!
//! ## Map of the crate
//!
//! Every type a user needs is at the crate root, one path each; the modules
//! behind them are private, except [`args`] (tool-argument equality, for
//! callers who compare arguments themselves), `wire` (feature `wire`:
//! AgentScope JSON out) and `journal` (feature `journal`: the session as an
//! append-only log, read back after a reset; `journal::Session` owns a
//! context and its log). Each type's page explains its concept.
//!
//! | concept | types |
//! |---|---|
//! | configuration | [`Config`] ([`InjectionConfig`], [`ContextConfig`]) validated into [`ValidConfig`]; [`ConfigBuf`] reads it from AgentScope's JSON, or with the agent's name and context size from one session document ([`ConfigBuf::load_session`], a [`SessionConfig`]); [`ConfigError`], [`LoadError`], [`Warning`] |
//! | one step | [`Engine`] (decide, render, or both), [`Step`] and [`TaskCounts`] in, [`Decision`] and [`Outcome`] out, [`HintTooLong`] |
//! | the context | [`Conversation`] and [`Message`] over [`Block`]s (your own storage, or [`SliceConversation`]); [`ContextStore`], a fixed-capacity one |
//! | constant-time steps | [`AgentContext`] (a store and its tracker in one, the usual choice), or a [`Tracker`] you tell of every change to your own context |
//! | time | [`Clock`] ([`FixedClock`], [`EpochTickClock`]), [`Timestamp`], [`Zone`] and [`resolve_zone`] |
//! | live values | [`LiveFields`] (read when a hint is made), [`LiveFn`] (the fields read by a closure), [`LiveReadings`] (one result per field, for async sensors) |
//!
//! ## Where each dimension is decided
//!
//! | dimension | in the [`Decision`] | what it holds |
//! |---|---|---|
//! | time | [`Decision::time`] | a [`TimeDecision`]: inject the clock's [`Timestamp`], not due, or skipped with a [`TimeSkipped`] reason |
//! | tasks | [`Decision::tasks`] | the [`TaskCounts`] to remind of |
//! | context length | [`Decision::context`] | a [`ContextLength`]: the tokens, the trigger, whether to suggest compressing |
//! | tool error | [`Decision::tool_error`] | a [`ToolError`]: the count of identical failed calls (arguments compared at the engine's [`args::Capacity`], the device's unless [`Engine::with_argument_capacity`] chose the host's) and the failing tool, [`ToolError::tool_name`] |
//! | watch (envaware's own) | [`Decision::watch`] | a [`WatchSet`]: the watched fields whose reading moved from the value the context last told ([`Watch::fires`]) |
//! | the hint text | [`Engine::render`] (or [`Engine::step`]) | the [`Outcome`]: the hint, the event flag, the [`Warnings`] |
//!
//! When each dimension fires, and when it fires again, is on [`Decision`].
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

#[cfg(test)]
extern crate std;

pub mod args;
mod clock;
mod config;
mod conversation;
mod engine;
mod ieee;
#[cfg(feature = "journal")]
#[cfg_attr(docsrs, doc(cfg(feature = "journal")))]
pub mod journal;
mod json;
mod live;
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub mod openai;
#[cfg(feature = "_bench-phases")]
#[doc(hidden)]
pub mod phases;
// Starts CPython: a test helper, kept out of the no_std sources.
mod agent_context;
#[cfg(test)]
#[path = "../tests/support/reference.rs"]
// Its users are the strptime and zone tests, some of them with
// `custom-time-format` only.
#[cfg_attr(not(feature = "custom-time-format"), allow(dead_code))]
mod reference;
mod render;
mod rules;
mod store;
mod text;
mod time;
mod tracker;
#[cfg(feature = "wire")]
#[cfg_attr(docsrs, doc(cfg(feature = "wire")))]
pub mod wire;

/// The code blocks of the repository's README and `docs/` pages, compiled
/// and run as doc tests (`cargo test --doc -p envaware`) so the
/// documentation cannot drift. Only rustdoc's doc-test pass sees them: the
/// files are outside the published package.
#[cfg(doctest)]
mod documentation {
    #[doc = include_str!("../../README.md")]
    mod readme {}
    #[doc = include_str!("../../docs/integrating.md")]
    mod integrating {}
    #[doc = include_str!("../../docs/differences.md")]
    mod differences {}
    #[doc = include_str!("../../docs/footprint.md")]
    mod footprint {}
    #[doc = include_str!("../../docs/time-zones.md")]
    mod time_zones {}
    #[doc = include_str!("../../docs/sim.md")]
    mod sim {}
    #[doc = include_str!("../../docs/testing.md")]
    mod testing {}
    #[doc = include_str!("../../docs/benchmarks.md")]
    mod benchmarks {}
    #[cfg(feature = "journal")]
    #[doc = include_str!("../../docs/reboot.md")]
    mod reboot {}
    #[doc = include_str!("../../firmware/README.md")]
    mod firmware {}
    #[cfg(feature = "openai")]
    #[doc = include_str!("../../docs/openai.md")]
    mod openai {}
}

pub use agent_context::{AgentContext, StepError};
pub use clock::{Clock, EpochTickClock, FixedClock, Timestamp};
pub use config::error::{ConfigError, ConfigField, Warning};
pub use config::load::session::{SessionConfig, DEFAULT_AGENT_NAME, DEFAULT_CONTEXT_SIZE};
pub use config::load::{ConfigBuf, LoadError};
pub use config::watch::{
    Decimal, Interval, Watch, WatchError, WatchFire, WatchList, WatchParam, WatchPath,
    WatchProblem, MAX_WATCHES, MAX_WATCH_NAME,
};
pub use config::{
    Config, ContextConfig, ExtraFields, InjectionConfig, Span, StrList, ZoneName,
    DEFAULT_INJECTION_SOURCE, DEFAULT_TASK_TOOL_NAMES, DEFAULT_TEMPLATE, DEFAULT_TOOL_RETRIES_HINT,
    RUNTIME_STATE_PLACEHOLDER,
};
pub use conversation::{
    Block, Conversation, HintText, Message, Role, SliceConversation, SliceMessage, ToolResultState,
};
pub use engine::{Engine, Outcome};
pub use json::JsonErrorKind;
pub use live::{LiveFields, LiveFn, LiveReadings, UNAVAILABLE};
pub use render::HintTooLong;
pub use rules::compiled::ValidConfig;
pub use rules::watch::WatchSet;
pub use rules::{
    ContextLength, Decision, Step, StepInput, TaskCounts, TimeDecision, TimeSkipped, ToolError,
    Warnings,
};
pub use store::{Appended, ContextStore, StoreError, StoredMessage};
pub use time::{resolve_zone, CreatedAt, TimeFormatError, Zone, DEFAULT_TIME_FORMAT};
pub use tracker::Tracker;
