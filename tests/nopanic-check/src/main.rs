//! Calls every public entry point of the core on inputs the compiler
//! cannot see (`core::hint::black_box`), so every panic path the core can
//! reach on some input is linked. Only built, never run.
//!
//! Adding an entry point is one line in [`entry_points`].
#![no_std]
#![no_main]

use core::hint::black_box;

use envaware::conversation::{Block, HintText, SliceConversation, SliceMessage};
use envaware::load::ConfigBuf;
use envaware::store::ContextStore;
use envaware::text::{ByteWriter, Joined, Replace};
use envaware::tracker::Tracker;
use envaware::{Clock, Config, Engine, EpochTickClock, FieldList, FixedClock, Role, Step, TaskCounts, Timestamp, ToolResultState};

#[cfg(feature = "link")]
extern "C" {
    /// Defined nowhere: linking succeeds only if no panic is reachable.
    fn envaware_core_can_panic() -> !;
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    #[cfg(feature = "link")]
    // SAFETY: never called when the link succeeds; the symbol does not exist.
    unsafe {
        let _ = info;
        envaware_core_can_panic()
    }
    #[cfg(not(feature = "link"))]
    {
        // Keeps every panic's `Location` in the image, for `cargo xtask nopanic`.
        black_box(info.location());
        loop {}
    }
}

/// Text the compiler knows nothing about.
fn text() -> &'static str {
    black_box("")
}

fn number() -> i64 {
    black_box(0)
}

fn sink<T>(value: T) {
    black_box(value);
}

fn step(agent_name: &str) -> Step<'_> {
    let tasks = TaskCounts { pending: number() as u64, in_progress: number() as u64 };
    Step { agent_name, tasks, cur_iter: number() as u64, input_tokens: number(), context_size: number() }
}

fn blocks() -> [Block<'static>; 4] {
    let parts: &'static [&'static str] = black_box(&["", ""]);
    [
        Block::Hint { source: Some(text()), text: HintText::Parts(parts) },
        Block::ToolCall { id: text(), name: text(), input: text() },
        Block::ToolResult { id: text(), name: text(), state: ToolResultState::from_name(text()).unwrap_or(ToolResultState::Error) },
        Block::Hint { source: None, text: HintText::Single(text()) },
    ]
}

/// One line per public entry point.
fn entry_points() {
    sink(envaware::args::argument_key(text()));
    sink(envaware::json::parse(text(), number() as usize).map(|v| (v.kind(), v.members().count(), v.items().count())));
    sink(envaware::json::parse(text(), 32).ok().and_then(|v| v.as_str()).map(|s| (s.code_points().count(), s.eq_str(text()), s.cmp_python(&s))));
    sink(envaware::time::check_format(text()).map(|i| i.parseable()));
    sink(envaware::time::parse_time(text(), text()).map(|r| r.to_timestamp(envaware::time::resolve_zone(text()).unwrap_or(envaware::time::Zone::Utc))));
    sink(envaware::time::format_time(&mut ByteWriter::new(&mut [0; 64]), text(), Timestamp::from_unix_micros(number()), envaware::time::Zone::Utc));
    sink(envaware::time::resolve_zone(text()).map(|z| envaware::time::local_naive(Timestamp(number()), z)));
    sink(envaware::time::zone_name_crashes_reference(text()));
    sink(envaware::text::py_strip(text()));
    sink(Joined::new(black_box(&["", ""])).capture(text(), text()));
    sink(Joined::new(black_box(&["", ""])).capture_at(number() as usize, text(), text()));
    sink({
        let mut buf = [0u8; 32];
        let mut w = ByteWriter::new(&mut buf);
        Replace::new(&mut w, text(), text()).escaping_replacement().finish();
        envaware::text::push_escaped(&mut w, text().as_bytes());
        w.finish().map(str::len)
    });
    sink({
        let mut clock = EpochTickClock::new(number() as u32, || number() as u64);
        clock.set(Timestamp(number()));
        clock.now()
    });
    sink(load_and_step());
}

/// Configuration from JSON, the context store, the engine and the tracker.
fn load_and_step() -> Option<usize> {
    let mut buf: ConfigBuf<512, 8, 8> = ConfigBuf::new();
    buf.load_injection(text()).ok()?;
    buf.load_context(text()).ok()?;
    let engine = Engine::new(buf.config()).ok()?;
    let _ = Config::default().validate();
    let mut store: ContextStore<8, 32, 1024> = ContextStore::new();
    sink(store.push_message(Role::from_name(text()).unwrap_or(Role::Assistant), text(), &blocks()));
    sink(store.append_blocks_to_last(&blocks()));
    sink(store.compact(number() as usize));
    let mut out = [0u8; 512];
    let mut clock = FixedClock::at(Timestamp(number()));
    let live = black_box(FieldList::Slice(&[("", "")]));
    let mut live = live;
    let agent = text();
    sink(engine.step(&store, &step(agent), &mut clock, &mut live, &mut out).map(|o| o.hint.map(str::len)));
    let messages = [SliceMessage { role: Role::Assistant, name: agent, blocks: &blocks() }];
    let slice = SliceConversation(&messages);
    let decision = engine.decide(&slice, &step(agent), Some(Timestamp(number())));
    sink(engine.render(&decision, &slice, &live, &mut out).map(|h| h.map(str::len)));
    let mut tracker = Tracker::from_conversation(&engine, agent, &store);
    tracker.push_message(&messages[0]);
    tracker.append_blocks(&messages[0], number() as usize);
    tracker.evict_oldest(number() as usize);
    sink(tracker.step(&store, &step(agent), &mut clock, &mut live, &mut out).map(|o| o.hint.map(str::len)));
    #[cfg(feature = "demo-panic")]
    sink(out[number() as usize]); // a panic made reachable on purpose
    Some(out.len())
}

#[no_mangle]
pub extern "C" fn _start() -> ! {
    entry_points();
    loop {}
}
