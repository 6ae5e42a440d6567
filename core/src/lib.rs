#![doc = include_str!("../README.md")]
//!
//! ## Layers
//!
//! The crate reads in layers:
//! - [`config`]: `InjectionConfig`/`ContextConfig` and their validation;
//!   [`load`] reads them from JSON with pydantic's lax coercions;
//! - [`clock`]: the wall clock, a trait the caller plugs in;
//! - [`time`]: Python-exact strftime/strptime and zone handling;
//! - [`conversation`]: how the rules read a context; [`store`] is a
//!   fixed-capacity context an agent can use directly;
//! - [`args`] (over [`json`]): tool-argument equality as the reference
//!   compares arguments, hashed, never materialized;
//! - [`rules`]: the four dimensions; [`render`]: the hint text;
//! - [`engine`]: one call per step; [`tracker`] makes its context reading
//!   incremental, in constant time per step; [`tracked`] owns a store and
//!   its tracker together, and [`live`] holds live readings that may fail;
//! - `wire` (feature `wire`): AgentScope JSON output.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations, unused_qualifications, rustdoc::broken_intra_doc_links)]

#[cfg(test)]
extern crate std;

pub mod args;
pub mod clock;
pub mod config;
pub mod conversation;
pub mod engine;
mod iana;
pub mod json;
pub mod live;
pub mod load;
pub mod render;
pub mod rules;
pub mod store;
pub mod text;
pub mod time;
pub mod tracked;
pub mod tracker;
#[cfg(feature = "wire")]
pub mod wire;
mod zone_rules;

pub use clock::{Clock, EpochTickClock, FixedClock, Timestamp};
pub use config::{Config, ConfigError, ContextConfig, FieldList, InjectionConfig, StrList, ValidConfig, Warning, ZoneName};
pub use conversation::{Block, Conversation, HintText, Message, Role, SliceConversation, SliceMessage, ToolResultState};
pub use engine::{Engine, Outcome};
pub use live::{LiveReadings, UNAVAILABLE};
pub use load::{ConfigBuf, LoadError};
pub use render::{HintTooLong, LiveFields};
pub use rules::{Decision, Step, TaskCounts, TimeDecision, TimeSkipped, Warnings};
pub use store::{Appended, ContextStore, StoreError};
pub use tracked::{StepError, TrackedContext};
pub use tracker::Tracker;
