//! The worst-case stack of one decision, measured in QEMU on a Cortex-M3
//! (lm3s6965evb) and on rv32imc (`virt`). Each case paints the free stack, runs one
//! `Engine::step` or `Tracker::step` over an adversarial context, and finds
//! the deepest word that lost the paint. The context, the hint buffer and
//! the engine live in `main`'s frame, where a device keeps them: only what
//! one decision itself needs is counted.
//!
//! Prints `stack <case>: N B` per case, then `decision stack (worst case):
//! N B`, then the model's request and reply (`model path stack, …`: they
//! run after a step, not inside it, so they are not decision cases); also
//! checks, on this filtered build (Europe/Berlin only), that a
//! left-out zone is a typed error. Exits 0, or 1 when a check fails.
#![no_std]
#![no_main]

use core::fmt::Write as _;
use core::hint::black_box;

use envaware::args::MAX_DEPTH;
use envaware::ContextStore;
use envaware::Tracker;
use envaware::Warning;
use envaware::{Block, HintText, SliceConversation, SliceMessage};
use envaware::{
    Config, ConfigError, Engine, ExtraFields, FixedClock, InjectionConfig, LiveFields, Role, Step,
    StepInput, TaskCounts, Timestamp, ToolResultState,
};
use semihosting::println;

const PAINT: u32 = 0x5EA5_0F57;

/// The store a device would size for long tool arguments.
type Store = ContextStore<16, 64, 16384>;

// ------------------------------------------------------------ measuring

/// What differs between the boards: the stack pointer, the stack's lowest
/// address, and a fault's report.
#[cfg(target_arch = "arm")]
mod platform {
    use cortex_m_rt::{exception, ExceptionFrame};

    extern "C" {
        static mut _stack_end: u32;
    }

    pub fn sp() -> usize {
        cortex_m::register::msp::read() as usize
    }

    pub fn stack_end() -> usize {
        &raw const _stack_end as usize
    }

    #[exception]
    unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
        semihosting::println!("FAIL: hard fault at pc {:#x}", frame.pc());
        semihosting::process::exit(2)
    }
}

#[cfg(target_arch = "riscv32")]
mod platform {
    extern "C" {
        /// riscv-rt's lowest stack address (the `.stack` region's start).
        static mut __estack: u32;
    }

    pub fn sp() -> usize {
        let sp: usize;
        // SAFETY: reads a register, touches no memory.
        unsafe { core::arch::asm!("mv {}, sp", out(reg) sp, options(nomem, nostack)) };
        sp
    }

    pub fn stack_end() -> usize {
        &raw const __estack as usize
    }

    /// Any exception (riscv-rt's default loops forever, which would hang
    /// the run until its timeout).
    #[export_name = "ExceptionHandler"]
    fn exception(_: &riscv_rt::TrapFrame) -> ! {
        let (cause, pc) = (riscv::register::mcause::read().bits(), riscv::register::mepc::read());
        semihosting::println!("FAIL: exception {cause} at pc {pc:#x}");
        semihosting::process::exit(2)
    }
}

/// Paints every word from the bottom of the stack up to just below this
/// function's own frame.
#[inline(never)]
fn paint() {
    let top = platform::sp() - 16;
    let mut addr = platform::stack_end();
    while addr < top {
        // SAFETY: below the stack pointer, above the stack's end: RAM that
        // nothing uses.
        unsafe { core::ptr::write_volatile(addr as *mut u32, PAINT) };
        addr += 4;
    }
}

/// The deepest word below `base` that lost the paint.
fn deepest(base: usize) -> usize {
    let mut addr = platform::stack_end();
    // SAFETY: as in `paint`.
    while addr < base && unsafe { core::ptr::read_volatile(addr as *const u32) } == PAINT {
        addr += 4;
    }
    base - addr
}

/// The stack `case` uses, in bytes, from the call on: called through a
/// pointer, so nothing of it is inlined into this frame.
#[inline(never)]
fn measure(case: fn(&mut Run<'_>) -> usize, run: &mut Run<'_>) -> (usize, usize) {
    paint();
    let base = platform::sp();
    let hint_len = black_box(case)(run);
    (deepest(base), hint_len)
}

// ------------------------------------------------------------ the cases

/// What one decision reads and writes; all of it outside the measured frames.
struct Run<'a> {
    engine: Engine<'a>,
    /// A tracker that observed `store`, as the agent keeps one.
    tracker: Tracker<'a>,
    store: &'a Store,
    slice: SliceConversation<'a>,
    step: Step<'a>,
    /// The same step without the name, for the tracker.
    input: StepInput,
    live: Sensors,
    hint: &'a mut [u8],
}

fn engine_step(run: &mut Run<'_>) -> usize {
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    match run.engine.step(run.store, &run.step, &mut clock, &mut run.live, run.hint) {
        Ok(o) => o.hint.map_or(1, str::len),
        Err(_) => 0,
    }
}

fn tracker_step(run: &mut Run<'_>) -> usize {
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    match run.tracker.step(run.store, &run.input, &mut clock, &mut run.live, run.hint) {
        Ok(o) => o.hint.map_or(1, str::len),
        Err(_) => 0,
    }
}

/// The decision alone, without rendering: what the argument comparison
/// and the context reading take.
fn engine_decide(run: &mut Run<'_>) -> usize {
    let now = Some(Timestamp::from_unix_seconds(1_784_687_400));
    let decision = run.engine.decide(run.store, &run.step, now);
    2 + usize::from(decision.tool_error.is_some())
}

/// The argument comparison alone, on the newest call.
fn argument_key(run: &mut Run<'_>) -> usize {
    use envaware::{Conversation, Message};
    let Some(last) = run.store.newest(0) else { return 0 };
    let Some(Block::ToolCall { input, .. }) = last.block(0) else { return 0 };
    2 + (envaware::args::argument_key(input).as_u128() & 1) as usize
}

fn slice_step(run: &mut Run<'_>) -> usize {
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_793_500_000));
    match run.engine.step(&run.slice, &run.step, &mut clock, &mut run.live, run.hint) {
        Ok(o) => o.hint.map_or(1, str::len),
        Err(_) => 0,
    }
}

/// Live fields with long values, re-read at each injection.
struct Sensors {
    reads: u32,
    values: [Text<96>; 6],
}

impl LiveFields for Sensors {
    fn refresh(&mut self) {
        self.reads += 1;
        for (i, v) in self.values.iter_mut().enumerate() {
            v.clear();
            let _ = write!(
                v,
                "{}.{:04} °C at sensor {i}, read {} ({:-<40})",
                20 + i,
                self.reads * 625,
                self.reads,
                ""
            );
        }
    }
    fn len(&self) -> usize {
        self.values.len()
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        const KEYS: [&str; 6] =
            ["temperature", "humidity", "pressure", "battery", "position", "timezone"];
        Some((KEYS.get(i)?, self.values.get(i)?.as_str()))
    }
}

/// A fixed text buffer.
struct Text<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Text<N> {
    const fn new() -> Self {
        Text { bytes: [0; N], len: 0 }
    }
    fn clear(&mut self) {
        self.len = 0;
    }
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> core::fmt::Write for Text<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let dst = self.bytes.get_mut(self.len..self.len + s.len()).ok_or(core::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

/// Tool arguments that make the comparison work hardest.
fn argument(shape: usize, t: &mut Text<4400>) -> core::fmt::Result {
    t.clear();
    match shape {
        // The deepest nesting compared: objects, four members a level
        // (128 open at once), keys out of order, floats and escapes inside.
        0 => {
            for _ in 0..MAX_DEPTH {
                t.write_str("{\"d\": -0.0, \"c\": 1.7976931348623157e308, \"b\": \"\\ud83d\\ude00\\u00e9\", \"a\": ")?;
            }
            t.write_str("[1e400, -1e-400, 123456789012345678901234567890]")?;
            for _ in 0..MAX_DEPTH {
                t.write_str("}")?;
            }
        }
        // Arrays of objects, alternating, to the bound.
        1 => {
            for _ in 0..MAX_DEPTH / 2 {
                t.write_str("[{\"z\": 0.1, \"y\": [], \"x\": ")?;
            }
            t.write_str("2.5e-308")?;
            for _ in 0..MAX_DEPTH / 2 {
                t.write_str("}]")?;
            }
        }
        // One level past the bound: the fall-back path (validity still read).
        2 => {
            for _ in 0..=MAX_DEPTH {
                t.write_str("{\"k\": ")?;
            }
            t.write_str("1")?;
            for _ in 0..=MAX_DEPTH {
                t.write_str("}")?;
            }
        }
        // Far past the bound, deeper than the JSON reader tracks.
        3 => {
            for _ in 0..2100 {
                t.write_str("[")?;
            }
            for _ in 0..2100 {
                t.write_str("]")?;
            }
        }
        // The smallest arguments: what a decision costs besides comparing.
        5 => t.write_str("{}")?,
        // Long numbers and strings.
        _ => {
            t.write_str("{\"n\": ")?;
            for _ in 0..3800 {
                t.write_str("7")?;
            }
            t.write_str(", \"f\": 0.30000000000000004441, \"s\": \"")?;
            for _ in 0..40 {
                t.write_str("\\u00e9\\n\\\"x")?;
            }
            t.write_str("\"}")?;
        }
    }
    Ok(())
}

/// A context ending in three failed calls with `input`, after a user turn.
fn fill_failing_calls(store: &mut Store, input: &str) -> bool {
    store.clear();
    let fail =
        |id| Block::ToolResult { id, name: "OpenVent", state: ToolResultState::Error, output: "" };
    let blocks = [
        Block::ToolCall { id: "call-1", name: "OpenVent", input },
        fail("call-1"),
        Block::ToolCall { id: "call-2", name: "OpenVent", input },
        fail("call-2"),
        Block::ToolCall { id: "call-3", name: "OpenVent", input },
        fail("call-3"),
    ];
    store.push_message(Role::User, "user", &[Block::Other]).is_ok()
        && store.push_message(Role::Assistant, "rover", &blocks).is_ok()
}

/// A full store: 16 messages with long text, the recorded time in the oldest.
fn fill_full(store: &mut Store, source: &'static str) -> bool {
    store.clear();
    let hint = "<system-reminder>\n<current-time>Sunday, 25 October 2026 02:30:00.000000 +0100 (CET), day 298, week 43/42</current-time>\n<timezone>Europe/Berlin</timezone>\n</system-reminder>";
    let mut ok = store
        .push_message(
            Role::Assistant,
            "rover",
            &[Block::Hint { source: Some(source), text: HintText::Single(hint), created_at: None }],
        )
        .is_ok();
    let mut long = Text::<900>::new();
    while long.write_str("x").is_ok() {}
    for i in 0..15 {
        let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
        let text = HintText::Single(long.as_str());
        ok &= store
            .push_message(
                role,
                "rover",
                &[Block::Other, Block::Hint { source: Some("other"), text, created_at: None }],
            )
            .is_ok();
    }
    ok
}

// ------------------------------------------------------------ the program

const FORMAT: &str = "%A, %d %B %Y %H:%M:%S.%f %z (%Z), day %j, week %U/%W";
const SOURCE: &str = "{\"label\": \"System\", \"sublabel\": \"Runtime State\"}";

fn long_template() -> &'static str {
    const T: &str = concat!(
        "<system-reminder>{note} {runtime_state} {{braces}} ",
        "Treat the following as the ground truth at this point of the conversation; anything stated earlier is outdated. ",
        "Treat the following as the ground truth at this point of the conversation; anything stated earlier is outdated. ",
        "Treat the following as the ground truth at this point of the conversation; anything stated earlier is outdated. ",
        "Treat the following as the ground truth at this point of the conversation; anything stated earlier is outdated. ",
        "{runtime_state}\n{runtime_state}\n</system-reminder>"
    );
    T
}

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    let mut failed = zone_checks();
    let fields: [(&str, &str); 3] = [
        ("robot", "Sprout, greenhouse B, bed A, row 3 (the long way round: north gate, east aisle, vents 1-4)"),
        ("tasks", "replaced in place, as dict.update does"),
        ("mission", "water the beds, then check the vents and report the temperature every ten minutes"),
    ];
    let injection = InjectionConfig {
        timezone: "Europe/Berlin",
        time_format: FORMAT,
        time_interval: 0.0,
        template: long_template(),
        extra_fields: ExtraFields::Slice(&fields),
        ..Default::default()
    };
    let engine = match Engine::new(Config { injection, ..Default::default() }) {
        Ok(e) => e,
        Err(e) => {
            println!("FAIL: the adversarial configuration is invalid: {e}");
            semihosting::process::exit(1)
        }
    };
    let mut store = Store::new();
    let mut hint = [0u8; 8192];
    let mut arg = Text::<4400>::new();
    let input = StepInput {
        tasks: TaskCounts { pending: u64::MAX, in_progress: u64::MAX },
        cur_iter: 0,
        input_tokens: i64::MAX,
        context_size: i64::MAX,
    };
    let step = input.for_agent("rover");
    // The recorded time itself spans two parts: read through the copy scratch.
    let parts_long =
        ["Sunday, 25 October 2026 02:30:00.000000 +0100 (CET), ", "day 298, week 43/42"];
    let parts = [
        "<current-time>",
        parts_long[0],
        parts_long[1],
        "</current-time>\n<timezone>Europe/",
        "Berlin</timezone>",
    ];
    let parts_msg =
        [Block::Hint { source: Some(SOURCE), text: HintText::Parts(&parts), created_at: None }];
    let slice_msgs = [SliceMessage { role: Role::Assistant, name: "rover", blocks: &parts_msg }];

    let mut worst = 0;
    let mut report = |name: &str,
                      shape: Option<usize>,
                      case: fn(&mut Run<'_>) -> usize,
                      store: &mut Store,
                      hint: &mut [u8]| {
        let filled = match shape {
            Some(s) => argument(s, &mut arg).is_ok() && fill_failing_calls(store, arg.as_str()),
            None => fill_full(store, SOURCE),
        };
        let live = Sensors { reads: 0, values: [const { Text::new() }; 6] };
        let tracker = Tracker::from_conversation(&engine, step.agent_name, &*store);
        let mut run = Run {
            engine,
            tracker,
            store,
            slice: SliceConversation(&slice_msgs),
            step,
            input,
            live,
            hint,
        };
        let (used, len) = measure(case, &mut run);
        let fired = len > 1;
        println!(
            "stack {name}: {used} B (hint {len} B){}",
            if filled && fired { "" } else { " FAIL: no context or no hint" }
        );
        worst = worst.max(used);
        filled && fired
    };
    let mut ok = true;
    let shapes = [
        "args at the depth bound",
        "args arrays of objects",
        "args past the bound",
        "args 2100 deep",
        "",
        "",
        "args long numbers",
    ];
    for (i, name) in shapes.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        ok &= report(name, Some(i), engine_step, &mut store, &mut hint);
    }
    ok &= report(
        "decide only, args at the depth bound",
        Some(0),
        engine_decide,
        &mut store,
        &mut hint,
    );
    ok &= report(
        "decide only, args arrays of objects",
        Some(1),
        engine_decide,
        &mut store,
        &mut hint,
    );
    ok &= report("decide only, args {}", Some(5), engine_decide, &mut store, &mut hint);
    ok &= report("args {}", Some(5), engine_step, &mut store, &mut hint);
    ok &= report("argument_key alone, args {}", Some(5), argument_key, &mut store, &mut hint);
    ok &= report(
        "argument_key alone, args at the depth bound",
        Some(0),
        argument_key,
        &mut store,
        &mut hint,
    );
    ok &= report("tracker, args at the depth bound", Some(0), tracker_step, &mut store, &mut hint);
    ok &=
        report("full store, long template, live fields", None, engine_step, &mut store, &mut hint);
    ok &= report("tracker, full store", None, tracker_step, &mut store, &mut hint);
    ok &= report("decide only, full store", None, engine_decide, &mut store, &mut hint);
    ok &= report("recorded time in parts", None, slice_step, &mut store, &mut hint);
    if !ok {
        println!("FAIL: a case did not build its context or make a hint");
        failed = true;
    }
    println!("decision stack (worst case): {worst} B");
    failed |= !request_path(&mut store, &mut hint);
    semihosting::process::exit(i32::from(failed))
}

/// On this build only Europe/Berlin (and UTC, Etc/*) is compiled in.
fn zone_checks() -> bool {
    let with = |timezone, filtered_zone_falls_back_to_utc| {
        Engine::new(Config {
            injection: InjectionConfig {
                timezone,
                filtered_zone_falls_back_to_utc,
                ..Default::default()
            },
            ..Default::default()
        })
    };
    let mut failed = false;
    let mut check = |what: &str, ok: bool| {
        if !ok {
            println!("FAIL: {what}");
            failed = true;
        }
    };
    let tokyo = with("Asia/Tokyo", false);
    check(
        "a left-out zone is ZoneNotCompiledIn",
        matches!(tokyo, Err(ConfigError::ZoneNotCompiledIn(name)) if name.as_str() == "Asia/Tokyo"),
    );
    if let Err(e) = tokyo {
        println!("Asia/Tokyo: {e}");
    }
    let warns = |e: Result<Engine<'_>, ConfigError>| {
        e.is_ok_and(|e| e.config().warnings().any(|w| w == Warning::TimezoneFellBackToUtc))
    };
    check("a left-out zone falls back to UTC when asked", warns(with("Asia/Tokyo", true)));
    check(
        "an unknown name falls back to UTC, as the reference",
        warns(with("Mars/Olympus_Mons", false)),
    );
    check(
        "a compiled-in zone resolves",
        with("Europe/Berlin", false).is_ok_and(|e| e.config().warnings().next().is_none()),
    );
    failed
}

// ------------------------------------------------------------ the request

/// A reply with a text and two tool calls, every string escaped.
const REPLY: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"\u2026","content":"Opening vent 2: 29.5 \u00b0C.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"OpenVent","arguments":"{\"vent\": 2}"}},{"id":"call_2","type":"function","function":{"name":"ReadTemperature","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1480,"completion_tokens":31}}"#;

/// The same reply streamed: server-sent events, text and arguments in
/// 16-byte pieces.
const REPLY_STREAMED: &str = r#"data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"\u2026"},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"Opening vent 2: "},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"29.5 \u00b0C."},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"OpenVent","arguments":"{\"vent\": 2}"}}]},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"ReadTemperature","arguments":"{}"}}]},"finish_reason":null}]}

data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

"#;

fn model_request(run: &mut Run<'_>) -> usize {
    let request = envaware::openai::ChatRequest {
        model: "m",
        system_prompt: "You are Sprout.",
        summary: Some("<system-info>earlier</system-info>"),
        tools: Some("[]"),
        stream: false,
    };
    // The whole body, written into the core's counting writer.
    request.body_len(run.store)
}

fn model_reply(run: &mut Run<'_>) -> usize {
    // The hint buffer is the scratch buffer: an I/O buffer, outside the frame.
    match envaware::openai::ChatResponse::parse(REPLY.as_bytes(), run.hint) {
        Ok(reply) => reply.blocks().len(),
        Err(_) => 0,
    }
}

fn model_reply_streamed(run: &mut Run<'_>) -> usize {
    match envaware::openai::ChatResponse::parse_stream(REPLY_STREAMED.as_bytes(), run.hint) {
        Ok(reply) => reply.blocks().len(),
        Err(_) => 0,
    }
}

/// The model request over the full store and a reply parsed back: their
/// stack, apart from the I/O buffers (the writer's sink, the scratch).
fn request_path(store: &mut Store, hint: &mut [u8]) -> bool {
    let engine = match Engine::new(Config::default()) {
        Ok(e) => e,
        Err(_) => return false,
    };
    let filled = fill_full(store, SOURCE);
    let input =
        StepInput { tasks: TaskCounts::default(), cur_iter: 0, input_tokens: 0, context_size: 1 };
    let mut run = Run {
        engine,
        tracker: Tracker::from_conversation(&engine, "rover", &*store),
        store,
        slice: SliceConversation(&[]),
        step: input.for_agent("rover"),
        input,
        live: Sensors { reads: 0, values: [const { Text::new() }; 6] },
        hint,
    };
    let (request, bytes) = measure(model_request, &mut run);
    let (reply, blocks) = measure(model_reply, &mut run);
    let (streamed, streamed_blocks) = measure(model_reply_streamed, &mut run);
    println!("model path stack, the request over the full store: {request} B (body {bytes} B)");
    println!("model path stack, a reply with 2 calls and escapes: {reply} B ({blocks} blocks)");
    println!("model path stack, the same reply streamed: {streamed} B ({streamed_blocks} blocks)");
    println!(
        "model path stack (worst case, after the step, not in it): {} B",
        request.max(reply).max(streamed)
    );
    filled && bytes > 1 && blocks == 4 && streamed_blocks == 4
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    println!("FAIL: panic: {info}");
    semihosting::process::exit(101)
}
