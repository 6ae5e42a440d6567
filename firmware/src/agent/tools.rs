//! The device's tools: what the model's tool calls do on the board. Each
//! is a stand-in for an actuator or a store, with a fixed outcome, so that
//! a run is the same every time: vent 2's motor is jammed (`OpenVent`
//! fails), everything else works, and `CompressContext` makes the agent
//! compress its context (keeping the newest message).

use envaware::ToolResultState;

/// What running a tool call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// How it ended.
    pub state: ToolResultState,
    /// What the tool says back (the `tool` message's text in the next
    /// request).
    pub output: &'static str,
    /// Messages to keep when the tool compresses the context.
    pub compress: Option<usize>,
}

/// Runs the tool `name` (its arguments are the model's; these tools read
/// none). An unknown tool fails, saying so.
pub fn run(name: &str) -> Outcome {
    let ok = |output| Outcome { state: ToolResultState::Success, output, compress: None };
    match name {
        "TaskList" => ok("3 tasks"),
        "TaskUpdate" => ok("updated"),
        "OpenVent" => {
            Outcome { state: ToolResultState::Error, output: "motor jammed", compress: None }
        }
        "Water" => ok("2 L on bed A"),
        "ReadLog" => ok("humidity 61-78 %"),
        "Dock" => ok("docked"),
        "CompressContext" => {
            Outcome { state: ToolResultState::Success, output: "compressed", compress: Some(1) }
        }
        _ => Outcome { state: ToolResultState::Error, output: "no such tool", compress: None },
    }
}
