//! The session: who the agent is, where it is, its configuration
//! ([`config`]) and its script ([`SCRIPT`]), the same on the board and in
//! the host tests.
//!
//! The tool calls are the model's: each step's [`Reply`] (the scripted
//! model server's answer, or the board's own copy of it with no model
//! attached) asks for them, and the device runs them
//! ([`crate::agent::tools`]) and logs their results before the next step,
//! which decides on them. The script makes each dimension due at a known
//! step:
//!
//! | step | before it                                       | hint fields                         |
//! |------|-------------------------------------------------|-------------------------------------|
//! | 0    | the operator's first message                    | current-time, timezone              |
//! | 1    | the operator schedules 3 tasks                  | tasks                               |
//! | 2    | the agent listed its tasks and started one      | (none, unless the temperature moved)|
//! | 3, 4 | `OpenVent` failed, arguments in another order   | (none)                              |
//! | 5    | `OpenVent` failed a third time                  | tool-error (unless an environment step started a reply) |
//! | 6    | 40 s later (beyond the 36 s interval)           | current-time, timezone              |
//! | 7    | a long log fills the context                    | context-length                      |
//! | 8    | the agent compressed: the store keeps 1 message | current-time, timezone, tasks       |
//! | 9    | 12 s later: tasks done, the robot docked        | (none, unless the watch fires)      |
//!
//! The configuration matches `firmware/session-config.json`, which the
//! simulator replays the device's log with.

use envaware::openai::ChatRequest;
use envaware::{
    AgentContext, Config, ContextConfig, Decimal, InjectionConfig, Interval, TaskCounts, Watch,
    WatchList,
};

/// The agent's name.
pub const AGENT: &str = "Sprout";
/// The model the demo's requests name (the scripted server ignores it).
pub const MODEL: &str = "envaware-demo";
/// The agent's system prompt: the first message of every request.
pub const SYSTEM_PROMPT: &str = "You are Sprout, a greenhouse robot.";
/// The request each step sends its model (no tools; the board's pacer
/// sets `stream` when told `stream=1`).
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
    /// A message from the operator (a user message, with its text).
    User(&'static str),
    /// The agent thinks (a block the context keeps no text of).
    Thinking,
}

/// A tool call the model asks for: its id, tool and raw arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// The call's id.
    pub id: &'static str,
    /// The tool.
    pub name: &'static str,
    /// The arguments, as the model wrote them.
    pub arguments: &'static str,
}

/// The model's reply: its text, and the tools it calls (run by the device
/// before the next step: [`crate::agent::tools`]).
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    /// The text.
    pub text: &'static str,
    /// The tool calls.
    pub calls: &'static [Call],
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
    /// The scripted model's reply to this step's request: what the model
    /// server answers in the demo (`firmware/model-script.jsonl`, in the
    /// order of the requests), and what the board takes as its reply with
    /// no model attached.
    pub reply: Reply,
}

const fn tasks(pending: u64, in_progress: u64) -> TaskCounts {
    TaskCounts { pending, in_progress }
}

const fn call(id: &'static str, name: &'static str, arguments: &'static str) -> Call {
    Call { id, name, arguments }
}

/// The scripted model's reply to an environment step's request (the agent
/// woken by a reading): it notes it.
pub const ENVIRONMENT_REPLY: Reply = Reply { text: "Noted: the temperature moved.", calls: &[] };

/// The session. The tool calls are the model's (each step's `reply`): the
/// device runs them after the reply and logs their results, so step
/// `k + 1` decides on them.
pub const SCRIPT: &[ScriptStep] = &[
    ScriptStep {
        note: "morning round: the operator asks for a greenhouse check",
        wait_ms: 0,
        events: &[Event::User("Good morning. Please check the greenhouse.")],
        tasks: tasks(0, 0),
        cur_iter: 0,
        input_tokens: 900,
        reply: Reply { text: "Good morning. Starting the greenhouse check.", calls: &[] },
    },
    ScriptStep {
        note: "the operator schedules 3 tasks",
        wait_ms: 1_000,
        events: &[Event::Thinking, Event::User("Water bed A, open vent 2, then dock.")],
        tasks: tasks(3, 0),
        cur_iter: 0,
        input_tokens: 1_100,
        reply: Reply {
            text: "Three tasks noted; starting with bed A.",
            calls: &[
                call("c1", "TaskList", "{}"),
                call("c2", "TaskUpdate", r#"{"id": 1, "state": "in_progress"}"#),
            ],
        },
    },
    ScriptStep {
        note: "the agent has listed its tasks and started watering bed A",
        wait_ms: 2_000,
        events: &[],
        tasks: tasks(2, 1),
        cur_iter: 1,
        input_tokens: 1_300,
        reply: Reply {
            text: "Watering bed A; opening vent 2.",
            calls: &[call("c3", "OpenVent", r#"{"vent": 2, "angle": 45}"#)],
        },
    },
    ScriptStep {
        note: "OpenVent failed",
        wait_ms: 1_500,
        events: &[],
        tasks: tasks(2, 1),
        cur_iter: 2,
        input_tokens: 1_400,
        reply: Reply {
            text: "Vent 2 did not open; trying again.",
            calls: &[call("c4", "OpenVent", r#"{"angle": 45, "vent": 2}"#)],
        },
    },
    ScriptStep {
        note: "OpenVent failed again, same arguments in another key order",
        wait_ms: 1_500,
        events: &[],
        tasks: tasks(2, 1),
        cur_iter: 3,
        input_tokens: 1_500,
        reply: Reply {
            text: "Vent 2 failed again; one more try.",
            calls: &[call("c5", "OpenVent", r#"{"angle":45,"vent":2}"#)],
        },
    },
    ScriptStep {
        note: "OpenVent failed a third time",
        wait_ms: 1_500,
        events: &[],
        tasks: tasks(2, 1),
        cur_iter: 4,
        input_tokens: 1_600,
        reply: Reply {
            text: "Leaving vent 2 closed; watering bed A.",
            calls: &[call("c6", "Water", r#"{"bed": "A", "litres": 2}"#)],
        },
    },
    ScriptStep {
        note: "40 s later: bed A watered, the operator asks for a status",
        wait_ms: 40_000,
        events: &[Event::User("How is bed A?")],
        tasks: tasks(1, 1),
        cur_iter: 0,
        input_tokens: 2_000,
        reply: Reply {
            text: "Bed A is watered. Reading the humidity log.",
            calls: &[call("c7", "ReadLog", r#"{"sensor": "humidity", "hours": 24}"#)],
        },
    },
    ScriptStep {
        note: "a day of humidity logs fills the context",
        wait_ms: 3_000,
        events: &[Event::User("Anything odd in the humidity?")],
        tasks: tasks(1, 1),
        cur_iter: 0,
        input_tokens: 2_600,
        reply: Reply {
            text: "The log is long; compressing the context.",
            calls: &[call("c8", "CompressContext", "{}")],
        },
    },
    ScriptStep {
        note: "the agent compressed its context",
        wait_ms: 2_000,
        events: &[],
        tasks: tasks(1, 1),
        cur_iter: 1,
        input_tokens: 700,
        reply: Reply {
            text: "Context compressed; finishing up and docking.",
            calls: &[
                call("c9", "TaskUpdate", r#"{"id": 1, "state": "completed"}"#),
                call("c10", "Dock", "{}"),
            ],
        },
    },
    ScriptStep {
        note: "all tasks done: the robot docked",
        // Longer than the watch's heartbeat (`max_interval`, 10 s): the
        // steady temperature is told again.
        wait_ms: 12_000,
        events: &[],
        tasks: tasks(0, 0),
        cur_iter: 2,
        input_tokens: 800,
        reply: Reply { text: "All tasks done; standing by.", calls: &[] },
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
