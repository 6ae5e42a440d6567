//! What a step costs, by context length: the reference's full rescan
//! against the awareness tracker, plus the tool-argument comparison.
//!
//! `cargo xtask bench` runs this, then AgentScope 2.0.11 on the same
//! contexts, and prints the ratios from one run. With
//! `ENVAWARE_BENCH_CONTEXTS=DIR` set, each context is also written to
//! `DIR/context-<messages>.json` as a scenario (format v1) for
//! `tests/reference/bench_reference.py`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use envaware::args::argument_key;
use envaware::Tracker;
use envaware::DEFAULT_INJECTION_SOURCE;
use envaware::{Block, HintText, SliceConversation, SliceMessage};
use envaware::{
    Config, Conversation, Engine, Role, StepInput, TaskCounts, Timestamp, ToolResultState,
};
use std::fmt::Write;
use std::hint::black_box;

const AGENT: &str = "rover";
/// The recorded time (2026-07-22T02:30:00Z); each decision is a minute later.
const RECORDED_AT: i64 = 1_784_687_400;
const NOW: &str = "2026-07-22T02:31:00Z";
const RECORDED: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>\n</system-reminder>";
/// A hint of ours that records no time (the context-length dimension).
const CONTEXT_HINT: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<context-length>Your current context contains 91000 tokens. When reaching 102400 tokens, your context will be compressed.</context-length>\n</system-reminder>";
const OTHER_SOURCE: &str = "permission";
const OTHER_HINT: &str = "The user allowed `Move` for this session.";
const TOOLS: [(&str, &str); 3] = [
    ("Move", r#"{"x": 1.5, "y": -2, "speed": "slow"}"#),
    ("ReadSensor", r#"{"sensor": "soil_moisture", "bed": "A"}"#),
    ("Bash", r#"{"command": "ls -la /var/log/greenhouse", "timeout": 30}"#),
];

/// One content block, owning its text.
enum B {
    Text(String),
    Hint { source: &'static str, text: &'static str },
    Call { id: String, name: &'static str, input: &'static str },
    Result { id: String, name: &'static str },
}

struct M {
    role: Role,
    name: &'static str,
    blocks: Vec<B>,
}

/// A context of `len` messages, a realistic mix: user turns, the agent's
/// text, tool calls and their results, hints of ours that record no time
/// and hints from elsewhere. The only time hint is in the oldest message, so
/// the full scan must read every message to find it. The agent created its
/// tasks early on (a `TaskCreate` call), so the tasks do not fire; the newest
/// message ends with a successful result, so the tool error does not.
fn context(len: usize) -> Vec<M> {
    let agent = |blocks| M { role: Role::Assistant, name: AGENT, blocks };
    let call = |i: usize, (name, input): (&'static str, &'static str)| {
        [
            B::Call { id: format!("call_{i}"), name, input },
            B::Result { id: format!("call_{i}"), name },
        ]
    };
    (0..len)
        .map(|i| match i {
            0 => agent(vec![
                B::Text("Starting the morning round.".into()),
                B::Hint { source: DEFAULT_INJECTION_SOURCE, text: RECORDED },
            ]),
            1 => agent(call(i, ("TaskCreate", r#"{"subject": "water bed A"}"#)).into()),
            _ if i + 1 == len => agent(call(i, TOOLS[0]).into()),
            _ => match i % 10 {
                0 => M {
                    role: Role::User,
                    name: "user",
                    blocks: vec![B::Text(format!("Check row {i} and report back."))],
                },
                5 => agent(vec![
                    B::Hint { source: DEFAULT_INJECTION_SOURCE, text: CONTEXT_HINT },
                    B::Text("Noted.".into()),
                ]),
                7 => agent(vec![B::Hint { source: OTHER_SOURCE, text: OTHER_HINT }]),
                k => {
                    let mut blocks = vec![B::Text(format!("Step {i}: next I use the tool."))];
                    blocks.extend(call(i, TOOLS[k % TOOLS.len()]));
                    agent(blocks)
                }
            },
        })
        .collect()
}

fn view(b: &B) -> Block<'_> {
    match b {
        B::Text(_) => Block::Other,
        B::Hint { source, text } => {
            Block::Hint { source: Some(source), text: HintText::Single(text), created_at: None }
        }
        B::Call { id, name, input } => Block::ToolCall { id, name, input },
        B::Result { id, name } => {
            Block::ToolResult { id, name, state: ToolResultState::Success, output: "" }
        }
    }
}

/// JSON string literal (serde_json's: the scenarios only need valid JSON).
fn js(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// The scenario (format v1) of one decision on `msgs`.
fn scenario(msgs: &[M]) -> String {
    let mut out = format!(
        r#"{{"agent_name": {}, "now": {}, "cur_iter": 1, "input_tokens": 0, "context_size": 128000, "tasks": [{{"state": "in_progress"}}], "context": ["#,
        js(AGENT),
        js(NOW)
    );
    for (i, m) in msgs.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let _ = write!(
            out,
            r#"{sep}{{"name": {}, "role": {}, "content": ["#,
            js(m.name),
            js(m.role.name())
        );
        for (k, b) in m.blocks.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            let _ = match b {
                B::Text(t) => write!(out, r#"{sep}{{"type": "text", "text": {}}}"#, js(t)),
                B::Hint { source, text } => write!(
                    out,
                    r#"{sep}{{"type": "hint", "source": {}, "hint": {}}}"#,
                    js(source),
                    js(text)
                ),
                B::Call { id, name, input } => {
                    write!(
                        out,
                        r#"{sep}{{"type": "tool_call", "id": {}, "name": {}, "input": {}}}"#,
                        js(id),
                        js(name),
                        js(input)
                    )
                }
                B::Result { id, name } => write!(
                    out,
                    r#"{sep}{{"type": "tool_result", "id": {}, "name": {}, "output": "done", "state": "success"}}"#,
                    js(id),
                    js(name)
                ),
            };
        }
        out.push_str("]}");
    }
    out.push_str("]}\n");
    out
}

fn decide(c: &mut Criterion) {
    let engine = Engine::new(Config::default()).unwrap();
    let input = StepInput {
        tasks: TaskCounts { pending: 0, in_progress: 1 },
        cur_iter: 1,
        input_tokens: 0,
        context_size: 128_000,
    };
    let step = input.for_agent(AGENT);
    let now = Some(Timestamp::from_unix_seconds(RECORDED_AT + 60));
    let out_dir = std::env::var_os("ENVAWARE_BENCH_CONTEXTS").map(std::path::PathBuf::from);
    let mut group = c.benchmark_group("decide");
    for len in [10usize, 100, 1_000, 10_000] {
        let msgs = context(len);
        if let Some(dir) = &out_dir {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("context-{len}.json")), scenario(&msgs)).unwrap();
        }
        let views: Vec<Vec<Block<'_>>> =
            msgs.iter().map(|m| m.blocks.iter().map(view).collect()).collect();
        let messages: Vec<SliceMessage<'_>> = msgs
            .iter()
            .zip(&views)
            .map(|(m, blocks)| SliceMessage { role: m.role, name: m.name, blocks })
            .collect();
        let conversation = SliceConversation(&messages);
        let tracker = Tracker::from_conversation(&engine, AGENT, &conversation);
        // Both must agree, and decide not to inject (as AgentScope does on
        // the same context), before their speed means anything.
        let full = engine.decide(&conversation, &step, now);
        assert_eq!(full, tracker.decide(&conversation, &input, now));
        assert!(!full.fires(), "the benchmark context must not inject: {full:?}");
        assert_eq!(conversation.message_count(), len);
        group.bench_with_input(BenchmarkId::new("full_scan", len), &len, |b, _| {
            b.iter(|| engine.decide(black_box(&conversation), &step, now))
        });
        group.bench_with_input(BenchmarkId::new("tracker", len), &len, |b, _| {
            b.iter(|| tracker.decide(black_box(&conversation), &input, now))
        });
    }
    group.finish();
}

fn arguments(c: &mut Criterion) {
    let raw = r#"{"vent": 2, "percent": 40.5, "zones": ["north", "south"], "note": "caf\u00e9", "retry": {"max": 3, "backoff": 1.5e-3}}"#;
    c.bench_function("argument_key/100_bytes", |b| b.iter(|| argument_key(black_box(raw))));
}

criterion_group!(benches, decide, arguments);
criterion_main!(benches);
