//! The whole engine over arbitrary bytes: `injection JSON \0 context JSON
//! \0 session`, where the session bytes drive a fixed-capacity context
//! (messages pushed and appended, compressions, clock moves) and steps.
//! Never panics; at every step `decide` agrees with `step`, a hint is made
//! exactly when a dimension fires, a hint that does not fit says how much
//! room it needs and then fits in that, and the hint is appended to the
//! context as AgentScope does.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use envaware::conversation::{Block, Conversation, HintText, Message, Role, ToolResultState};
use envaware::load::ConfigBuf;
use envaware::store::ContextStore;
use envaware::{Clock, Engine, FixedClock, Step, TaskCounts, Timestamp};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum In<'a> {
    Hint { ours: bool, source: Option<&'a str>, text: &'a str },
    Call { id: u8, name: Name<'a>, input: &'a str },
    Result { id: u8, name: Name<'a>, state: u8 },
    Other,
}

/// Tool names from a small set, so that calls repeat; or any text.
#[derive(Arbitrary, Debug)]
enum Name<'a> {
    Small(u8),
    Any(&'a str),
}

#[derive(Arbitrary, Debug)]
enum Op<'a> {
    Push { role: u8, ours: bool, blocks: Vec<In<'a>> },
    Append { blocks: Vec<In<'a>> },
    Step { pending: u8, in_progress: u8, cur_iter: u8, input_tokens: i64, context_size: u32 },
    Advance { seconds: i32 },
    SetClock { micros: Option<i64> },
    Compact { keep: u8 },
}

const NAMES: [&str; 4] = ["Bash", "OpenVent", "TaskList", "Read"];
const IDS: [&str; 4] = ["c1", "c2", "c3", "c4"];
const AGENT: &str = "Rover";

fn name<'a>(n: &Name<'a>) -> &'a str {
    match n {
        Name::Small(i) => NAMES[usize::from(*i) % NAMES.len()],
        Name::Any(s) => s,
    }
}

fn state(s: u8) -> ToolResultState {
    [ToolResultState::Error, ToolResultState::Success, ToolResultState::Interrupted, ToolResultState::Denied, ToolResultState::Running]
        [usize::from(s) % 5]
}

fn block<'a>(b: &In<'a>, source: &'a str) -> Block<'a> {
    match b {
        In::Hint { ours: true, text, .. } => Block::Hint { source: Some(source), text: HintText::Single(text) },
        In::Hint { source, text, .. } => Block::Hint { source: *source, text: HintText::Single(text) },
        In::Call { id, name: n, input } => Block::ToolCall { id: IDS[usize::from(*id) % 4], name: name(n), input },
        In::Result { id, name: n, state: s } => Block::ToolResult { id: IDS[usize::from(*id) % 4], name: name(n), state: state(*s) },
        In::Other => Block::Other,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0);
    let (Some(injection), Some(context), Some(session)) = (parts.next(), parts.next(), parts.next()) else { return };
    let (Ok(injection), Ok(context)) = (std::str::from_utf8(injection), std::str::from_utf8(context)) else { return };
    let mut cfg = ConfigBuf::<4096, 16, 16>::new();
    if cfg.load_injection(injection).is_err() || cfg.load_context(context).is_err() {
        return;
    }
    let Ok(engine) = Engine::new(cfg.config()) else { return };
    let source = engine.config().config().injection.injection_source;

    let mut store = ContextStore::<12, 48, 4096>::new();
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    let mut out = [0u8; 768];
    let mut u = Unstructured::new(session);
    let Ok(ops) = u.arbitrary_iter::<Op>() else { return };
    for op in ops.map_while(Result::ok).take(64) {
        match op {
            Op::Push { role, ours, blocks } => {
                let role = [Role::Assistant, Role::User, Role::System][usize::from(role) % 3];
                let from = if ours { AGENT } else { "other" };
                let blocks: Vec<Block> = blocks.iter().take(8).map(|b| block(b, source)).collect();
                let _ = store.push_message(role, from, &blocks);
            }
            Op::Append { blocks } => {
                let blocks: Vec<Block> = blocks.iter().take(8).map(|b| block(b, source)).collect();
                let _ = store.append_blocks_to_last(&blocks);
            }
            Op::Advance { seconds } => clock.advance(i64::from(seconds) * 1_000_000),
            Op::SetClock { micros } => clock = FixedClock(micros.map(Timestamp::from_unix_micros)),
            Op::Compact { keep } => {
                store.compact(usize::from(keep % 16));
            }
            Op::Step { pending, in_progress, cur_iter, input_tokens, context_size } => {
                let step = Step {
                    agent_name: AGENT,
                    tasks: TaskCounts { pending: pending.into(), in_progress: in_progress.into() },
                    cur_iter: cur_iter.into(),
                    input_tokens,
                    context_size: context_size.into(),
                };
                let now = {
                    let mut c = clock;
                    c.now()
                };
                let decided = engine.decide(&store, &step, now);
                let mut big;
                let hint = match engine.step(&store, &step, &mut clock, &mut (), &mut out) {
                    Ok(outcome) => {
                        assert_eq!(outcome.decision, decided, "step and decide disagree");
                        assert_eq!(outcome.hint.is_some(), decided.fires(), "a hint exactly when a dimension fires");
                        outcome.hint.map(str::to_string)
                    }
                    Err(e) => {
                        assert!(e.needed > out.len() && decided.fires(), "{e:?}");
                        big = vec![0u8; e.needed];
                        let outcome = engine.step(&store, &step, &mut clock, &mut (), &mut big).expect("the room it asked for is enough");
                        assert_eq!(outcome.decision, decided);
                        outcome.hint.map(str::to_string)
                    }
                };
                if let Some(text) = hint {
                    // AgentScope appends the hint to the agent's own newest
                    // message, else to a new one.
                    let hint = [Block::Hint { source: Some(source), text: HintText::Single(&text) }];
                    let ours = store.newest(0).is_some_and(|m| m.role() == Role::Assistant && m.name() == AGENT);
                    let _ = if ours { store.append_blocks_to_last(&hint) } else { store.push_message(Role::Assistant, AGENT, &hint) };
                }
            }
        }
    }
});
