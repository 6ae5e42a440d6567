//! The session: who the agent is, where it is, its configuration
//! ([`config`]) and its script ([`SCRIPT`]), the same on the board and in
//! the host tests.
//!
//! The script makes each dimension due at a known step:
//!
//! | step | what happens                                   | hint fields                         |
//! |------|------------------------------------------------|-------------------------------------|
//! | 0    | first reply                                    | current-time, timezone              |
//! | 1    | the operator schedules 3 tasks                 | tasks                               |
//! | 2    | the agent lists and starts a task              | (none, unless the temperature moved)|
//! | 3, 4 | `OpenVent` fails, arguments in another order   | (none)                              |
//! | 5    | `OpenVent` fails a third time                  | tool-error                          |
//! | 6    | 40 s later (beyond the 36 s interval)          | current-time, timezone              |
//! | 7    | a long log fills the context                   | context-length                      |
//! | 8    | the agent compresses: the store keeps 1 message| current-time, timezone, tasks       |
//! | 9    | 12 s later: tasks done, the robot docks        | (none, unless the watch fires)      |
//!
//! The configuration matches `firmware/session-config.json`, which the
//! simulator replays the device's log with.

use envaware::openai::ChatRequest;
use envaware::{
    AgentContext, Block, Config, ContextConfig, Decimal, InjectionConfig, Interval, TaskCounts,
    ToolResultState, Watch, WatchList,
};

/// The agent's name.
pub const AGENT: &str = "Sprout";
/// The model the demo's requests name (the scripted server ignores it).
pub const MODEL: &str = "envaware-demo";
/// The agent's system prompt: the first message of every request.
pub const SYSTEM_PROMPT: &str = "You are Sprout, a greenhouse robot.";
/// The request each step sends its model (no tools, no streaming).
pub const REQUEST: ChatRequest<'static> = ChatRequest {
    model: MODEL,
    system_prompt: SYSTEM_PROMPT,
    summary: None,
    tools: None,
    stream: false,
};
/// The largest response body the agent reads (a larger one is refused).
pub const MAX_REPLY: usize = 2048;
/// The zone the hints are written in (the only one compiled in besides UTC).
pub const TIMEZONE: &str = "Europe/Berlin";
/// Hours after which the time is injected again: 36 seconds, so that the
/// script shows it without a long run.
pub const TIME_INTERVAL_HOURS: f64 = 0.01;
/// The model's context window, in tokens.
pub const CONTEXT_SIZE: i64 = 4096;
/// `mantissa × 10^-scale`, in a constant.
const fn decimal(mantissa: i64, scale: u32) -> Decimal {
    match Decimal::new(mantissa, scale) {
        Some(d) => d,
        None => Decimal::ZERO,
    }
}

/// `seconds` as a watch's interval, in a constant.
const fn seconds(seconds: i64) -> Option<Interval> {
    Interval::from_secs(seconds)
}

/// The watch's floor: a change told sooner than this after the last
/// telling is held back (throttled) until it has passed. Longer than the
/// script's quick steps (2 to 3 s apart), so that a change between them waits.
pub const MIN_INTERVAL_SECS: i64 = 6;
/// The watch's heartbeat: a steady temperature is told again once the
/// telling is this old (the script waits 12 s before its last step).
pub const MAX_INTERVAL_SECS: i64 = 10;

/// The temperature watch: told again after a change of 2.0 °C, or on
/// crossing 28.0 °C (and back below 27.5 °C), but not sooner than 6 s
/// after the last telling (`min_interval`); and at least every 10 s
/// (`max_interval`), even when steady.
pub const WATCH: [(&str, Watch); 1] = [(
    "temperature",
    Watch {
        change: Some(decimal(20, 1)),
        above: Some(decimal(280, 1)),
        below: None,
        hysteresis: decimal(5, 1),
        min_interval: seconds(MIN_INTERVAL_SECS),
        max_interval: seconds(MAX_INTERVAL_SECS),
    },
)];

/// The context: 16 messages, 48 blocks, 4 KiB of strings (a hint at every
/// step, when the watched temperature swings, fills 3), with the tracker
/// that keeps each decision's reading constant.
pub type Context<'a> = AgentContext<'a, 16, 48, 4096>;

/// Something that happens in the context before a step.
#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// A user (operator) message.
    User,
    /// The agent's own blocks: appended to its message of the current reply
    /// when that is the newest, else a new message (as AgentScope's
    /// `append_context`).
    Agent(&'static [Block<'static>]),
    /// The agent compresses its context, keeping the newest messages.
    Compress {
        /// Messages kept.
        keep: usize,
    },
}

/// One scripted reasoning step.
#[derive(Debug, Clone, Copy)]
pub struct ScriptStep {
    /// What happens, for the log.
    pub note: &'static str,
    /// When the step is due, in milliseconds after the step before was due.
    pub wait_ms: u32,
    /// What enters the context before the step.
    pub events: &'static [Event],
    /// The plan's task counts at this step.
    pub tasks: TaskCounts,
    /// The iteration within the current reply.
    pub cur_iter: u64,
    /// The model's token count for this step's input.
    pub input_tokens: i64,
}

const fn tasks(pending: u64, in_progress: u64) -> TaskCounts {
    TaskCounts { pending, in_progress }
}

const fn call(id: &'static str, name: &'static str, input: &'static str) -> Block<'static> {
    Block::ToolCall { id, name, input }
}

const fn result(id: &'static str, name: &'static str, state: ToolResultState) -> Block<'static> {
    Block::ToolResult { id, name, state, output: "" }
}

use ToolResultState::{Error as Failed, Success as Done};

/// The session.
pub const SCRIPT: &[ScriptStep] = &[
    ScriptStep {
        note: "morning round: the operator asks for a greenhouse check",
        wait_ms: 0,
        events: &[Event::User],
        tasks: tasks(0, 0),
        cur_iter: 0,
        input_tokens: 900,
    },
    ScriptStep {
        note: "the operator schedules 3 tasks",
        wait_ms: 1_000,
        events: &[Event::Agent(&[Block::Other]), Event::User],
        tasks: tasks(3, 0),
        cur_iter: 0,
        input_tokens: 1_100,
    },
    ScriptStep {
        note: "the agent lists its tasks and starts watering bed A",
        wait_ms: 2_000,
        events: &[Event::Agent(&[
            call("c1", "TaskList", "{}"),
            result("c1", "TaskList", Done),
            call("c2", "TaskUpdate", r#"{"id": 1, "state": "in_progress"}"#),
            result("c2", "TaskUpdate", Done),
        ])],
        tasks: tasks(2, 1),
        cur_iter: 1,
        input_tokens: 1_300,
    },
    ScriptStep {
        note: "OpenVent fails",
        wait_ms: 1_500,
        events: &[Event::Agent(&[
            call("c3", "OpenVent", r#"{"vent": 2, "angle": 45}"#),
            result("c3", "OpenVent", Failed),
        ])],
        tasks: tasks(2, 1),
        cur_iter: 2,
        input_tokens: 1_400,
    },
    ScriptStep {
        note: "OpenVent fails again, same arguments in another key order",
        wait_ms: 1_500,
        events: &[Event::Agent(&[
            call("c4", "OpenVent", r#"{"angle": 45, "vent": 2}"#),
            result("c4", "OpenVent", Failed),
        ])],
        tasks: tasks(2, 1),
        cur_iter: 3,
        input_tokens: 1_500,
    },
    ScriptStep {
        note: "OpenVent fails a third time",
        wait_ms: 1_500,
        events: &[Event::Agent(&[
            call("c5", "OpenVent", r#"{"angle":45,"vent":2}"#),
            result("c5", "OpenVent", Failed),
        ])],
        tasks: tasks(2, 1),
        cur_iter: 4,
        input_tokens: 1_600,
    },
    ScriptStep {
        note: "40 s later: bed A watered, the operator asks for a status",
        wait_ms: 40_000,
        events: &[
            Event::Agent(&[
                call("c6", "Water", r#"{"bed": "A", "litres": 2}"#),
                result("c6", "Water", Done),
            ]),
            Event::User,
        ],
        tasks: tasks(1, 1),
        cur_iter: 0,
        input_tokens: 2_000,
    },
    ScriptStep {
        note: "a day of humidity logs fills the context",
        wait_ms: 3_000,
        events: &[
            Event::Agent(&[
                call("c7", "ReadLog", r#"{"sensor": "humidity", "hours": 24}"#),
                result("c7", "ReadLog", Done),
            ]),
            Event::User,
        ],
        tasks: tasks(1, 1),
        cur_iter: 0,
        input_tokens: 2_600,
    },
    ScriptStep {
        note: "the agent compresses its context",
        wait_ms: 2_000,
        events: &[
            Event::Agent(&[
                call("c8", "CompressContext", "{}"),
                result("c8", "CompressContext", Done),
            ]),
            Event::Compress { keep: 1 },
        ],
        tasks: tasks(1, 1),
        cur_iter: 1,
        input_tokens: 700,
    },
    ScriptStep {
        note: "all tasks done: the robot docks",
        // Longer than the watch's heartbeat (`max_interval`, 10 s): the
        // steady temperature is told again.
        wait_ms: 12_000,
        events: &[Event::Agent(&[
            call("c9", "TaskUpdate", r#"{"id": 1, "state": "completed"}"#),
            result("c9", "TaskUpdate", Done),
            call("c10", "Dock", "{}"),
            result("c10", "Dock", Done),
        ])],
        tasks: tasks(0, 0),
        cur_iter: 2,
        input_tokens: 800,
    },
];

// The host's demo checks `--temperatures` and `--reset-after` against
// `limits::STEPS`: it must be the script's length.
const _: () = assert!(SCRIPT.len() == crate::limits::STEPS);

/// The engine's configuration for the session.
pub fn config() -> Config<'static> {
    Config {
        injection: InjectionConfig {
            timezone: TIMEZONE,
            time_interval: TIME_INTERVAL_HOURS,
            watch: WatchList::Slice(&WATCH),
            ..InjectionConfig::default()
        },
        context: ContextConfig { compression_tool_enabled: true, ..ContextConfig::default() },
    }
}
