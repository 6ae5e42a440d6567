//! How long a long failing streak in one reply takes: the tracker observing
//! it block by block (as `AgentContext` does on a device), then one full
//! scan of it (`Engine::decide`).
//!
//! ```sh
//! cargo run --release -p envaware --example tool_streak -- pairs 10000 20000
//! cargo run --release -p envaware --example tool_streak -- reverse 25000 50000
//! ```
//!
//! Layouts: `pairs` (call, failed result, call, failed result, …), `batch`
//! (all the calls, then their failed results in the calls' order) and
//! `reverse` (all the calls, then their failed results newest call first).
//! Every call has its own id and the same arguments. Prints one line per
//! size: the layout, N, the tracker's time, the full scan's, and the
//! count both found.

use std::time::Instant;

use envaware::{
    Block, Config, Engine, SliceConversation, SliceMessage, StepInput, TaskCounts, ToolResultState,
    Tracker,
};

const AGENT: &str = "rover";

fn blocks<'a>(layout: &str, ids: &'a [String]) -> Vec<Block<'a>> {
    let call = |id: &'a String| Block::ToolCall { id, name: "Bash", input: r#"{"command": "ls"}"# };
    let failed = |id: &'a String| Block::ToolResult {
        id,
        name: "Bash",
        state: ToolResultState::Error,
        output: "",
    };
    match layout {
        "pairs" => ids.iter().flat_map(|id| [call(id), failed(id)]).collect(),
        "batch" => ids.iter().map(call).chain(ids.iter().map(failed)).collect(),
        "reverse" => ids.iter().map(call).chain(ids.iter().rev().map(failed)).collect(),
        _ => panic!("unknown layout {layout}: pairs, batch or reverse"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let layout = args.next().unwrap_or_else(|| "pairs".into());
    let engine = Engine::new(Config::default()).expect("the default configuration is valid");
    let step =
        StepInput { tasks: TaskCounts::default(), cur_iter: 1, input_tokens: 0, context_size: 1 };
    for n in args {
        let n: usize = n.parse().expect("a size");
        let ids: Vec<String> = (0..n).map(|i| format!("call_{i}")).collect();
        let blocks = blocks(&layout, &ids);
        let message = |len| SliceMessage {
            role: envaware::Role::Assistant,
            name: AGENT,
            blocks: &blocks[..len],
        };
        let start = Instant::now();
        let mut tracker = Tracker::new(&engine, AGENT);
        tracker.push_message(&message(0));
        for len in 1..=blocks.len() {
            tracker.append_blocks(&message(len), len - 1);
        }
        let msgs = [message(blocks.len())];
        let conv = SliceConversation(&msgs);
        let tracked = tracker.decide(&conv, &step, None);
        let tracker_time = start.elapsed();
        let start = Instant::now();
        let scanned = engine.decide(&conv, &step.for_agent(AGENT), None);
        let scan_time = start.elapsed();
        assert_eq!(tracked, scanned);
        let count = scanned.tool_error.map_or(0, |e| e.count);
        println!(
            "{layout} {n}: tracker {:.3} s, full scan {:.3} s, count {count}",
            tracker_time.as_secs_f64(),
            scan_time.as_secs_f64()
        );
    }
}
