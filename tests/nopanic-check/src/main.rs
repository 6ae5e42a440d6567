//! Calls every public entry point of the core on inputs the compiler
//! cannot see (`core::hint::black_box`), so every panic path the core can
//! reach on some input is linked. Only built, never run.
//!
//! Adding an entry point is one line in [`entry_points`].
#![no_std]
#![no_main]

use core::hint::black_box;

use envaware::ConfigBuf;
use envaware::ContextStore;
use envaware::Tracker;
use envaware::{
    AgentContext, Clock, Config, Engine, EpochTickClock, ExtraFields, FixedClock, LiveReadings,
    Role, Step, StepInput, TaskCounts, Timestamp, ToolResultState,
};
use envaware::{Block, HintText, SliceConversation, SliceMessage};

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

fn input() -> StepInput {
    let tasks = TaskCounts { pending: number() as u64, in_progress: number() as u64 };
    StepInput { tasks, cur_iter: number() as u64, input_tokens: number(), context_size: number() }
}

fn step(agent_name: &str) -> Step<'_> {
    input().for_agent(agent_name)
}

fn blocks() -> [Block<'static>; 4] {
    let parts: &'static [&'static str] = black_box(&["", ""]);
    [
        Block::Hint { source: Some(text()), text: HintText::Parts(parts), created_at: None },
        Block::ToolCall { id: text(), name: text(), input: text() },
        Block::ToolResult {
            id: text(),
            name: text(),
            state: ToolResultState::from_name(text()).unwrap_or(ToolResultState::Error),
            output: "",
        },
        Block::Hint { source: None, text: HintText::Single(text()), created_at: None },
    ]
}

/// One line per public entry point.
fn entry_points() {
    sink(envaware::args::argument_key(text()));
    sink(envaware::resolve_zone(text()));
    sink({
        let mut clock = EpochTickClock::new(number() as u32, number() as u32, || number() as u64);
        clock.set(Timestamp(number()));
        clock.now()
    });
    sink(envaware::Decimal::parse(text()));
    sink(envaware::Decimal::leading(text().bytes()));
    sink({
        let d = |t| envaware::Decimal::parse(t);
        let watch = envaware::Watch {
            change: d(text()),
            above: d(text()),
            below: d(text()),
            hysteresis: d(text()).unwrap_or_default(),
            min_interval: envaware::Interval::from_micros(number()),
            max_interval: d(text()).and_then(envaware::Interval::from_seconds),
        };
        watch.fires(d(text()), d(text()), Some(number()))
    });
    sink(load_and_step());
    sink(tracked_and_wire());
    sink(journal());
    sink(model_exchange());
}

/// The model's request written from a context, and a reply read back,
/// whole or streamed, from any bytes (feature `openai`).
fn model_exchange() -> Option<usize> {
    use envaware::openai::{ChatRequest, ChatResponse};
    let engine = Engine::new(Config::default()).ok()?;
    let context: AgentContext<'_, 8, 32, 1024> = AgentContext::new(&engine, "agent");
    let request = ChatRequest {
        model: text(),
        system_prompt: text(),
        summary: Some(text()),
        tools: Some(text()),
        stream: number() != 0,
    };
    sink(request.body_len(context.store()));
    let mut scratch = [0u8; 256];
    let body = text().as_bytes();
    let whole = ChatResponse::parse(body, &mut scratch).map(|r| r.blocks().len()).ok();
    let mut scratch = [0u8; 256];
    let streamed = ChatResponse::parse_stream(body, &mut scratch).map(|r| r.blocks().len()).ok();
    Some(whole.unwrap_or(0) + streamed.unwrap_or(0))
}

/// The session log: recording, a logged step, compaction, and both
/// passes of a restore on any bytes.
fn journal() -> Option<usize> {
    use envaware::journal::{Event, ItemReader, Journal};
    let engine = Engine::new(Config::default()).ok()?;
    let mut context: AgentContext<'_, 8, 32, 1024> = AgentContext::new(&engine, "agent");
    let mut journal = Journal::new(&context);
    let (mut out, mut hint, mut scratch) = ([0u8; 512], [0u8; 512], [0u8; 512]);
    sink(journal.start(&context, &mut out));
    let blocks = blocks();
    let events = [
        Event::User { name: text(), text: text() },
        Event::Message { role: Role::Assistant, name: text(), blocks: &blocks },
        Event::Assistant(&blocks),
        Event::ToolCall { id: text(), name: text(), input: text() },
        Event::Compress { keep: number() as usize },
    ];
    let recorded =
        journal.record(&mut context, &events[number() as usize % events.len()], &mut out);
    sink(recorded.map(|items| items.iter(&out).map(<[u8]>::len).sum::<usize>()));
    let mut live = LiveReadings::<2, 16>::new(["temperature", "uptime"]);
    let stepped = journal.step(
        &mut context,
        &input(),
        Some(Timestamp(number())),
        &mut live,
        &mut hint,
        &mut out,
    );
    sink(stepped.map(|(o, items)| {
        (o.hint.map(str::len), items.iter(&out).map(<[u8]>::len).sum::<usize>())
    }));
    // The split step, as an async sensor drives it.
    let decision = journal.decide(&mut context, &input(), Some(Timestamp(number())), &live);
    let rendered =
        journal.render_step(&mut context, decision, &input(), &mut live, &mut hint, &mut out);
    sink(rendered.map(|(o, items)| {
        (o.hint.map(str::len), items.iter(&out).map(<[u8]>::len).sum::<usize>())
    }));
    sink(journal.compaction_header(&context, &mut out));
    journal.popped(journal.dead_items());
    let item: &[u8] = black_box(&[]);
    sink(journal.check(item));
    sink(ItemReader::new().read(item).map(|head| (head.number, head.seq, head.kind)));
    let watches = engine.config().config().injection.watch;
    let mut blocks = [Block::Other; envaware::journal::MAX_EVENT_BLOCKS];
    sink(envaware::journal::decode(item, &watches, &mut blocks).map(|(seq, _)| seq));
    sink(journal.restore(&mut context, item, &mut scratch));
    Some(journal.restored_events() as usize)
}

/// The tracked context, the split step with live readings that may fail,
/// and the wire writers.
fn tracked_and_wire() -> Option<usize> {
    let engine = Engine::new(Config::default()).ok()?;
    let mut context: AgentContext<'_, 8, 32, 1024> = AgentContext::new(&engine, "agent");
    sink(context.user(text()));
    sink(context.agent(&blocks()));
    sink(context.tool_call(text(), text(), text()));
    sink(context.tool_result(text(), text(), ToolResultState::Error));
    sink(context.observe(Role::Assistant, text(), &blocks()));
    sink(context.append_hint(text(), Some(Timestamp(number()))));
    sink(envaware::CreatedAt::parse(text()).map(|at| at.age(Timestamp(number()), || number())));
    context.new_reply();
    sink(context.compress(number() as usize));
    let mut live = LiveReadings::<2, 16>::new(["temperature", "uptime"]);
    sink(live.record(number() as usize, if number() == 0 { Ok(number()) } else { Err(()) }));
    let decision = context.decide(&input(), Some(Timestamp(number())));
    sink(context.decide_with_readings(&input(), None, &live));
    let mut out = [0u8; 512];
    sink(context.render_step(decision, &mut live, &mut out).map(|o| o.hint.map(str::len)));
    let mut clock = FixedClock::at(Timestamp(number()));
    sink(context.step(&input(), &mut clock, &mut (), &mut out).map(|o| o.hint.map(str::len)));
    let decision = engine.decide(context.store(), &step("agent"), None);
    sink(
        engine
            .render_step(decision, context.store(), &mut live, &mut out)
            .map(|o| o.hint.map(str::len)),
    );
    let created_at = envaware::wire::IsoTime {
        at: Timestamp(number()),
        zone: envaware::resolve_zone(text()).unwrap_or(envaware::Zone::Utc),
    };
    sink(envaware::wire::write_hint_block(text(), text(), text(), created_at, &mut out));
    sink(engine.write_hint_block(text(), text(), Timestamp(number()), &mut out));
    let msg = context.newest(number() as usize)?;
    envaware::wire::write_message(
        &msg,
        &envaware::wire::MessageMeta { id: text(), created_at },
        &mut out,
    )
    .ok()
}

/// Configuration from JSON, the context store, the engine and the tracker.
fn load_and_step() -> Option<usize> {
    let mut buf: ConfigBuf<512, 8, 8> = ConfigBuf::with_capacity();
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
    let live = black_box(ExtraFields::Slice(&[("", "")]));
    let mut live = live;
    let agent = text();
    sink(
        engine
            .step(&store, &step(agent), &mut clock, &mut live, &mut out)
            .map(|o| o.hint.map(str::len)),
    );
    let messages = [SliceMessage { role: Role::Assistant, name: agent, blocks: &blocks() }];
    let slice = SliceConversation(&messages);
    let decision = engine.decide(&slice, &step(agent), Some(Timestamp(number())));
    sink(engine.render(&decision, &slice, &live, &mut out).map(|h| h.map(str::len)));
    sink(
        envaware::ToolError { count: number() as u64, result: number() as usize }
            .tool_name(&messages[0])
            .map(str::len),
    );
    let mut tracker = Tracker::from_conversation(&engine, agent, &store);
    tracker.push_message(&messages[0]);
    tracker.append_blocks(&messages[0], number() as usize);
    tracker.evict_oldest(number() as usize);
    sink(tracker.decide_with_readings(&store, &input(), None, &live));
    sink(engine.decide_with_readings(&slice, &step(agent), None, &live));
    sink(
        tracker
            .step(&store, &input(), &mut clock, &mut live, &mut out)
            .map(|o| o.hint.map(str::len)),
    );
    #[cfg(feature = "demo-panic")]
    sink(out[number() as usize]); // a panic made reachable on purpose
    Some(out.len())
}

#[no_mangle]
pub extern "C" fn _start() -> ! {
    entry_points();
    loop {}
}
