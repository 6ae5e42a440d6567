//! A bare-metal program that runs one engine step, so the whole core is
//! linked. It is only built, never run.
#![no_std]
#![no_main]

use envaware::Block;
use envaware::ContextStore;
use envaware::{Config, Engine, FixedClock, Role, StepInput, Timestamp};

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[no_mangle]
pub extern "C" fn _start() -> ! {
    let mut store: ContextStore<8, 32, 1024> = ContextStore::new();
    let _ = store.push_message(
        Role::Assistant,
        "bot",
        &[Block::ToolCall { id: "1", name: "Move", input: "{\"x\": 1}" }],
    );
    if let Ok(engine) = Engine::new(Config::default()) {
        let input = StepInput {
            tasks: Default::default(),
            cur_iter: 0,
            input_tokens: 0,
            context_size: 1000,
        };
        let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
        let mut buf = [0u8; 512];
        if let Ok(outcome) =
            engine.step(&store, &input.for_agent("bot"), &mut clock, &mut (), &mut buf)
        {
            // Keep the result observable so nothing is optimized away.
            core::hint::black_box(outcome.hint.map(str::len));
        }
        // The tracked context and the AgentScope JSON writer (serde,
        // serde-json-core) link without an allocator too.
        let mut context: envaware::AgentContext<'_, 4, 16, 512> =
            envaware::AgentContext::new(&engine, "bot");
        let _ = context.user("operator");
        if let Ok(outcome) = context.step(&input, &mut clock, &mut (), &mut buf) {
            core::hint::black_box(outcome.event);
        }
        if let Some(msg) = context.newest(0) {
            let created_at = envaware::wire::IsoTime {
                at: Timestamp::from_unix_seconds(0),
                zone: envaware::Zone::Utc,
            };
            let mut json = [0u8; 1024];
            let written = envaware::wire::write_message(
                &msg,
                &envaware::wire::MessageMeta { id: "m", created_at },
                &mut json,
            );
            core::hint::black_box(written.ok());
        }
    }
    loop {}
}
