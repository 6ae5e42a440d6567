//! `envaware-sim fuzz`: random agent sessions, driven through the core step
//! by step and compared with the independent [`model`](crate::model).
//!
//! A case is a configuration, a start instant and a list of events: user
//! messages, tool calls whose results succeed or fail (with arguments in
//! varying key order and formatting), task changes, clock advances (also
//! backwards, across DST changes, and exactly onto the time boundary),
//! compressions, token counts, configuration changes, hints written by
//! someone else, and reasoning steps. With a watch (some with time rules:
//! `min_interval` only, `max_interval` only, both), also readings, clock
//! moves onto a time rule's interval, and foreign hints telling a watched
//! field whose `created_at` is an instant (`Z` or an offset), a wall time
//! of the configured zone, unreadable or missing; the hints the steps
//! append carry the step's instant, as envaware writes it. At every step:
//!
//! - the core ([`Engine::step`](envaware::Engine::step), full scan of the context) must produce the
//!   hint, event and warnings the model produces, and the same watches
//!   fired, fired by heartbeat and throttled;
//! - the incremental [`Tracker`](envaware::Tracker) must decide exactly as the full scan.
//!
//! proptest generates and shrinks the cases. On a mismatch the minimal
//! session is printed and written as scenario JSON Lines (one line per
//! step, the last one the mismatching step, each with the model's
//! `expected` result as an extra key) that `envaware-sim eval` replays.
//!
//! The modules, in the order a case flows through them:
//!
//! - `case`: what a case is, and the proptest strategies that draw it;
//! - `raw`: the same argument value written in many ways;
//! - `world`: one session run event by event through the model, the core
//!   and its trackers, compared at each step ([`run_case`]);
//! - `runner`: many cases, shrinking, progress and the report ([`fuzz`]).
//!
//! # Why not proptest-state-machine
//!
//! embassy's ring-buffer tests write stateful property tests with
//! `proptest-state-machine`: a reference state machine generates
//! transitions valid in the current state, and the system under test
//! applies them. It was considered and not adopted here:
//!
//! - every event of a case is valid in every state (tool calls name an
//!   index into the case's arguments, compressions keep "up to" a count,
//!   steps are always allowed), so a plain `Vec<Event>` already shrinks by
//!   dropping and simplifying events, with no preconditions to maintain;
//! - each step compares more than a model and one system: the model, the
//!   core's full scan over two context representations (a `Vec` and the
//!   fixed-capacity store) and a tracker on each, and on a mismatch the
//!   session so far is written as scenario lines for `envaware-sim eval`;
//!   a `ReferenceStateMachine`/`StateMachineTest` pair would have to carry
//!   all of that in its system-under-test state anyway;
//! - configuration changes mid-session rebuild the engine and trackers,
//!   which the world already does in one place.

mod case;
mod raw;
mod runner;
mod world;

pub use case::{
    case_strategy, Advance, Ago, ArgFormat, Call, Case, CaseConfig, Event, Foreign, TaskOp, Tokens,
    ToldAt,
};
pub use runner::{
    describe, fuzz, summary, FuzzError, FuzzOptions, Report, DEFAULT_SHRINK_TIME, MAX_SHRINK_TIME,
    MAX_STEPS,
};
pub use world::{run_case, Mismatch, Stats, CLOCK_RANGE, DIMENSIONS};

use envaware::ConfigBuf;
use envaware::ContextStore;

/// The agent whose steps are fuzzed.
pub const AGENT: &str = "Friday";
const OTHER_AGENT: &str = "Scout";
type FuzzConfigBuf = ConfigBuf<8192, 16, 16>;
/// The fixed-capacity store the core also runs on, mirroring the context
/// until it would have to evict on its own (then it is left out).
type FuzzStore = ContextStore<128, 1024, 65536>;
