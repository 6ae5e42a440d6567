//! What a step costs, by context length: the reference's full rescan
//! against the awareness tracker, plus the tool-argument comparison.
//!
//! `cargo xtask bench` runs this and prints the ratios from one run.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use envaware::args::argument_key;
use envaware::config::DEFAULT_INJECTION_SOURCE;
use envaware::conversation::{Block, HintText, SliceConversation, SliceMessage};
use envaware::tracker::Tracker;
use envaware::{Config, Conversation, Engine, Role, Step, TaskCounts, Timestamp};
use std::hint::black_box;

const NOW: i64 = 1_784_687_400;
const RECORDED: &str = "<system-reminder>\n<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>\n</system-reminder>";

/// A context of `len` messages whose only time hint is the oldest one, so
/// the full scan must read every message to find it.
fn blocks(len: usize) -> Vec<[Block<'static>; 2]> {
    let hint = Block::Hint { source: Some(DEFAULT_INJECTION_SOURCE), text: HintText::Single(RECORDED) };
    let call = Block::ToolCall { id: "c", name: "Move", input: r#"{"x": 1, "y": 2}"# };
    let result = Block::ToolResult { id: "c", name: "Move", state: envaware::ToolResultState::Success };
    (0..len).map(|i| if i == 0 { [hint, Block::Other] } else { [call, result] }).collect()
}

fn decide(c: &mut Criterion) {
    let engine = Engine::new(Config::default()).unwrap();
    let step = Step { agent_name: "rover", tasks: TaskCounts::default(), cur_iter: 1, input_tokens: 0, context_size: 128_000 };
    let now = Some(Timestamp::from_unix_seconds(NOW + 60));
    let mut group = c.benchmark_group("decide");
    for len in [10usize, 100, 1_000, 10_000] {
        let storage = blocks(len);
        let messages: Vec<SliceMessage<'_>> =
            storage.iter().map(|b| SliceMessage { role: Role::Assistant, name: "rover", blocks: b }).collect();
        let conversation = SliceConversation(&messages);
        let tracker = Tracker::from_conversation(&engine, "rover", &conversation);
        // Both must agree before their speed means anything.
        assert_eq!(engine.decide(&conversation, &step, now), tracker.decide(&conversation, &step, now));
        assert_eq!(conversation.message_count(), len);
        group.bench_with_input(BenchmarkId::new("full_scan", len), &len, |b, _| {
            b.iter(|| engine.decide(black_box(&conversation), &step, now))
        });
        group.bench_with_input(BenchmarkId::new("tracker", len), &len, |b, _| {
            b.iter(|| tracker.decide(black_box(&conversation), &step, now))
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
