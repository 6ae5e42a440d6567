//! What every footprint program does: one decision over a small context
//! whose contents the optimizer cannot see (so nothing is folded away).
#![no_std]

use core::hint::black_box;

use envaware::Block;
use envaware::ContextStore;
use envaware::{
    Config, Engine, FixedClock, LiveFields, Role, Step, TaskCounts, Timestamp, ToolResultState,
};

/// Runs one step of `config` over a context ending in three failed calls,
/// the way an agent calls the core, and returns the hint's length.
pub fn one_step(config: Config<'_>) -> usize {
    one_step_with(config, &mut ())
}

/// [`one_step`] with live fields (a watch reads them).
pub fn one_step_with<L: LiveFields + ?Sized>(config: Config<'_>, live: &mut L) -> usize {
    let mut store: ContextStore<8, 32, 1024> = ContextStore::new();
    let input = black_box("{\"vent\": 2, \"angle\": 45.5}");
    let fail =
        |id| Block::ToolResult { id, name: "OpenVent", state: ToolResultState::Error, output: "" };
    let blocks = [
        Block::ToolCall { id: "1", name: "OpenVent", input },
        fail("1"),
        Block::ToolCall { id: "2", name: "OpenVent", input },
        fail("2"),
        Block::ToolCall { id: "3", name: "OpenVent", input },
        fail("3"),
    ];
    let _ = store.push_message(Role::User, "user", &[Block::Other]);
    let _ = store.push_message(Role::Assistant, "bot", &blocks);
    let Ok(engine) = Engine::new(config) else { return 0 };
    let step = Step {
        agent_name: "bot",
        tasks: TaskCounts { pending: 1, in_progress: 0 },
        cur_iter: 0,
        input_tokens: black_box(900),
        context_size: 1000,
    };
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(black_box(1_784_687_400)));
    let mut hint = [0u8; 1024];
    match engine.step(&store, &step, &mut clock, live, &mut hint) {
        Ok(outcome) => outcome.hint.map_or(0, str::len),
        Err(_) => 0,
    }
}

#[cfg(not(feature = "stack"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
