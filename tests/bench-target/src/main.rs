//! Instructions per decision on the Cortex-M3 (QEMU `lm3s6965evb`) and on
//! rv32imc (QEMU `virt`): the same cases on both, only the counter and the
//! start-up differ (`arm.rs`, `riscv.rs`).
//!
//! Run under `-icount shift=0`, QEMU counts instructions exactly: on the
//! Cortex-M3 its virtual clock advances one nanosecond per instruction, and
//! SysTick, on the 12.5 MHz core clock, counts one tick per 80 ns: 80
//! instructions; on rv32imc `minstret` counts them one by one. Each case
//! runs [`REPS`] times between two counter readings, and the cost of the
//! empty loop is taken off. Nothing here depends on the host, so two runs
//! print the same numbers. `cargo xtask bench --target` builds and runs it
//! on both; the output is one `name: N instructions` line per case, then
//! `done`. The first case checks the scale on a loop of known length.
#![no_std]
#![no_main]

use core::hint::black_box;

use envaware::args::argument_key;
use envaware::DEFAULT_INJECTION_SOURCE;
use envaware::{Block, HintText, SliceConversation, SliceMessage};
use envaware::Tracker;
use envaware::{Config, Engine, FixedClock, Role, StepInput, TaskCounts, Timestamp, ToolResultState};

#[cfg_attr(target_arch = "arm", path = "arm.rs")]
#[cfg_attr(target_arch = "riscv32", path = "riscv.rs")]
mod platform;

/// Repetitions per case.
const REPS: u32 = 16;

const AGENT: &str = "rover";
/// The recorded time, 2026-07-22T02:30:00Z.
const RECORDED_AT: i64 = 1_784_687_400;
const RECORDED: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>\n</system-reminder>";
const CONTEXT_HINT: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<context-length>Your current context contains 91000 tokens. When reaching 102400 tokens, your context will be compressed.</context-length>\n</system-reminder>";
/// The argument the comparison case normalizes (118 bytes, as on the host).
const ARGUMENT: &str =
    r#"{"vent": 2, "percent": 40.5, "zones": ["north", "south"], "note": "caf\u00e9", "retry": {"max": 3, "backoff": 1.5e-3}}"#;

// The kinds of message the contexts are made of: the same mix as the host
// benchmark (`core/benches/decide.rs`).
static FIRST: [Block<'static>; 2] =
    [Block::Other, Block::Hint { source: Some(DEFAULT_INJECTION_SOURCE), text: HintText::Single(RECORDED) }];
static TASKS: [Block<'static>; 2] = [
    Block::ToolCall { id: "call_1", name: "TaskCreate", input: r#"{"subject": "water bed A"}"# },
    Block::ToolResult { id: "call_1", name: "TaskCreate", state: ToolResultState::Success },
];
static USER: [Block<'static>; 1] = [Block::Other];
static OURS: [Block<'static>; 2] =
    [Block::Hint { source: Some(DEFAULT_INJECTION_SOURCE), text: HintText::Single(CONTEXT_HINT) }, Block::Other];
static OTHERS: [Block<'static>; 1] =
    [Block::Hint { source: Some("permission"), text: HintText::Single("The user allowed `Move` for this session.") }];
static TOOL: [Block<'static>; 3] = [
    Block::Other,
    Block::ToolCall { id: "call_9", name: "Move", input: r#"{"x": 1.5, "y": -2, "speed": "slow"}"# },
    Block::ToolResult { id: "call_9", name: "Move", state: ToolResultState::Success },
];

/// A context of `N` messages whose only time hint is the oldest.
fn context<const N: usize>() -> [SliceMessage<'static>; N] {
    core::array::from_fn(|i| {
        let (role, name, blocks): (Role, &str, &[Block<'static>]) = match i {
            0 => (Role::Assistant, AGENT, &FIRST),
            1 => (Role::Assistant, AGENT, &TASKS),
            _ if i + 1 == N => (Role::Assistant, AGENT, &TOOL),
            _ => match i % 10 {
                0 => (Role::User, "user", &USER),
                5 => (Role::Assistant, AGENT, &OURS),
                7 => (Role::Assistant, AGENT, &OTHERS),
                _ => (Role::Assistant, AGENT, &TOOL),
            },
        };
        SliceMessage { role, name, blocks }
    })
}

fn ticks(mut case: impl FnMut()) -> u32 {
    let start = platform::counter();
    for _ in 0..REPS {
        case();
    }
    platform::ticks_since(start)
}

struct Bench {
    overhead: u32,
}

impl Bench {
    fn report(&self, name: &str, messages: &str, case: impl FnMut()) {
        let spent = ticks(case).saturating_sub(self.overhead);
        semihosting::println!("{name}{messages}: {} instructions", spent * platform::INSTRUCTIONS_PER_TICK / REPS);
    }
}

fn fail(what: &str) -> ! {
    semihosting::eprintln!("bench-target: {what}");
    semihosting::process::exit(1)
}

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    platform::start_counter();
    let Ok(engine) = Engine::new(Config::default()) else { fail("configuration") };
    let input = StepInput { tasks: TaskCounts { pending: 0, in_progress: 1 }, cur_iter: 1, input_tokens: 0, context_size: 128_000 };
    let step = input.for_agent(AGENT);
    let quiet = Timestamp::from_unix_seconds(RECORDED_AT + 60);
    let due = Timestamp::from_unix_seconds(RECORDED_AT + 3_600);
    let bench = Bench { overhead: ticks(|| black_box(())) };
    let mut hint = [0u8; 512];
    // Checks the scale: a loop of 100,002 instructions.
    bench.report("calibration, asm::delay instructions=", "100002", platform::delay_100_002);

    let small = context::<8>();
    let large = context::<128>();
    for (label, messages) in [("8", &small[..]), ("128", &large[..])] {
        let conversation = SliceConversation(messages);
        let tracker = Tracker::from_conversation(&engine, AGENT, &conversation);
        // The cases must decide as their names say.
        let quiet_decision = tracker.decide(&conversation, &input, Some(quiet));
        if quiet_decision.fires() || quiet_decision != engine.decide(&conversation, &step, Some(quiet)) {
            fail("the quiet decision fires or differs from the scan");
        }
        match tracker.step(&conversation, &input, &mut FixedClock::at(due), &mut (), &mut hint) {
            Ok(outcome) if outcome.hint.is_some() => {}
            _ => fail("the due step renders no hint"),
        }
        bench.report("full scan, nothing to inject, messages=", label, || {
            black_box(engine.decide(black_box(&conversation), &step, Some(quiet)));
        });
        bench.report("tracked, nothing to inject, messages=", label, || {
            black_box(tracker.decide(black_box(&conversation), &input, Some(quiet)));
        });
        bench.report("tracked step that renders the time, messages=", label, || {
            let outcome = tracker.step(black_box(&conversation), &input, &mut FixedClock::at(due), &mut (), &mut hint);
            black_box(outcome.map(|o| o.hint.map(str::len)).ok());
        });
    }
    bench.report("argument_key, bytes=", "118", || {
        black_box(argument_key(black_box(ARGUMENT)));
    });
    semihosting::println!("done");
    semihosting::process::exit(0)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    semihosting::process::exit(101)
}
