//! The cases `cargo xtask bench --target` counts, and the checks that they
//! decide as their names say. Nothing here is specific to an architecture:
//! the program's entry and its [`Meter`] (a cycle or instruction counter)
//! are; a port to another core brings those and reuses this.

use core::hint::black_box;

use envaware::args::argument_key;
use envaware::phases;
use envaware::Tracker;
use envaware::DEFAULT_INJECTION_SOURCE;
use envaware::{Block, HintText, SliceConversation, SliceMessage};
use envaware::{
    Config, Engine, FixedClock, Role, StepInput, TaskCounts, Timestamp, ToolResultState,
};
use envaware::{CreatedAt, Decimal, ExtraFields, InjectionConfig, Interval, Watch, WatchList};

/// Counts the instructions of a case and prints `NAME: N instructions`.
pub trait Meter {
    /// Runs `case` (repeatedly) and reports its instructions per run under
    /// `name` followed by `label`.
    fn report<F: FnMut()>(&self, name: &str, label: &str, case: F);
    /// Reports a failed check and ends the program.
    fn fail(&self, what: &str) -> !;
}

const AGENT: &str = "rover";
/// The recorded time, 2026-07-22T02:30:00Z.
const RECORDED_AT: i64 = 1_784_687_400;
const RECORDED: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>\n</system-reminder>";
const CONTEXT_HINT: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<context-length>Your current context contains 91000 tokens. When reaching 102400 tokens, your context will be compressed.</context-length>\n</system-reminder>";
/// The argument the comparison case normalizes (118 bytes, as on the host).
const ARGUMENT: &str = r#"{"vent": 2, "percent": 40.5, "zones": ["north", "south"], "note": "caf\u00e9", "retry": {"max": 3, "backoff": 1.5e-3}}"#;

// The kinds of message the contexts are made of: the same mix as the host
// benchmark (`core/benches/decide.rs`).
static FIRST: [Block<'static>; 2] = [
    Block::Other,
    Block::Hint {
        source: Some(DEFAULT_INJECTION_SOURCE),
        text: HintText::Single(RECORDED),
        created_at: None,
    },
];
static TASKS: [Block<'static>; 2] = [
    Block::ToolCall { id: "call_1", name: "TaskCreate", input: r#"{"subject": "water bed A"}"# },
    Block::ToolResult {
        id: "call_1",
        name: "TaskCreate",
        state: ToolResultState::Success,
        output: "",
    },
];
static USER: [Block<'static>; 1] = [Block::Other];
static OURS: [Block<'static>; 2] = [
    Block::Hint {
        source: Some(DEFAULT_INJECTION_SOURCE),
        text: HintText::Single(CONTEXT_HINT),
        created_at: None,
    },
    Block::Other,
];
static OTHERS: [Block<'static>; 1] = [Block::Hint {
    source: Some("permission"),
    text: HintText::Single("The user allowed `Move` for this session."),
    created_at: None,
}];
static TOOL: [Block<'static>; 3] = [
    Block::Other,
    Block::ToolCall {
        id: "call_9",
        name: "Move",
        input: r#"{"x": 1.5, "y": -2, "speed": "slow"}"#,
    },
    Block::ToolResult { id: "call_9", name: "Move", state: ToolResultState::Success, output: "" },
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

/// Every case: the decisions and steps at 8 and 128 messages, the phases of
/// a tracked decision and of a firing step at 128, and `argument_key`.
pub fn run(bench: &impl Meter) {
    let Ok(engine) = Engine::new(Config::default()) else { bench.fail("configuration") };
    let input = StepInput {
        tasks: TaskCounts { pending: 0, in_progress: 1 },
        cur_iter: 1,
        input_tokens: 0,
        context_size: 128_000,
    };
    let step = input.for_agent(AGENT);
    let quiet = Timestamp::from_unix_seconds(RECORDED_AT + 60);
    let due = Timestamp::from_unix_seconds(RECORDED_AT + 3_600);
    let mut hint = [0u8; 512];

    let small = context::<8>();
    let large = context::<128>();
    for (label, messages) in [("8", &small[..]), ("128", &large[..])] {
        let conversation = SliceConversation(messages);
        let tracker = Tracker::from_conversation(&engine, AGENT, &conversation);
        // The cases must decide as their names say.
        let quiet_decision = tracker.decide(&conversation, &input, Some(quiet));
        if quiet_decision.fires()
            || quiet_decision != engine.decide(&conversation, &step, Some(quiet))
        {
            bench.fail("the quiet decision fires or differs from the scan");
        }
        match tracker.step(&conversation, &input, &mut FixedClock::at(due), &mut (), &mut hint) {
            Ok(outcome) if outcome.hint.is_some() => {}
            _ => bench.fail("the due step renders no hint"),
        }
        bench.report("full scan, nothing to inject, messages=", label, || {
            black_box(engine.decide(black_box(&conversation), &step, Some(quiet)));
        });
        bench.report("tracked, nothing to inject, messages=", label, || {
            black_box(tracker.decide(black_box(&conversation), &input, Some(quiet)));
        });
        bench.report("tracked step that renders the time, messages=", label, || {
            let outcome = tracker.step(
                black_box(&conversation),
                &input,
                &mut FixedClock::at(due),
                &mut (),
                &mut hint,
            );
            black_box(outcome.map(|o| o.hint.map(str::len)).ok());
        });
    }
    watched(bench, &input, quiet);
    let conversation = SliceConversation(&large[..]);
    let tracker = Tracker::from_conversation(&engine, AGENT, &conversation);
    phases_of_a_decision(bench, &tracker, &conversation, &input, quiet);
    phases_of_a_firing_step(bench, &engine, &tracker, &conversation, &input, due);
    bench.report("argument_key, bytes=", "118", || {
        black_box(argument_key(black_box(ARGUMENT)));
    });
    model_request(bench, &conversation);
}

/// A model's reply with text and a tool call, as a server sends it.
const RESPONSE: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Opening vent 2 to 40 %, the greenhouse is at 29.5 \u00b0C.","tool_calls":[{"id":"call_10","type":"function","function":{"name":"OpenVent","arguments":"{\"vent\": 2, \"percent\": 40}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1480,"completion_tokens":31,"total_tokens":1511}}"#;

/// The same reply streamed (`"stream": true`), as `envaware-sim
/// model-server` sends it: server-sent events, the text and the
/// arguments in 16-byte pieces.
const STREAMED: &str = r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"Opening vent 2 t"},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"o 40 %, the gree"},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"nhouse is at 29."},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"5 \u00b0C."},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_10","type":"function","function":{"name":"OpenVent","arguments":"{\"vent\": 2, \"per"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"cent\": 40}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

"#;

/// The model request for the 128-message context (written whole into the
/// core's counting writer, `body_len`) and the reply read back: the labels carry the bytes.
fn model_request(bench: &impl Meter, conversation: &SliceConversation<'_>) {
    use envaware::openai::{ChatRequest, ChatResponse};
    let request =
        ChatRequest { model: "m", system_prompt: "You are Sprout.", ..ChatRequest::default() };
    let bytes = request.body_len(conversation);
    let mut label = Label::default();
    // `body_len` writes the whole body into a counting writer.
    bench.report("openai request body, messages=128, bytes=", label.number(bytes), || {
        black_box(request.body_len(black_box(conversation)));
    });
    let mut scratch = [0u8; 128];
    match ChatResponse::parse(RESPONSE.as_bytes(), &mut scratch) {
        Ok(reply) if reply.blocks().len() == 2 => {}
        Ok(_) => bench.fail("the model's reply does not read as a text and a call"),
        Err(_) => bench.fail("the model's reply is refused"),
    }
    let mut label = Label::default();
    bench.report("openai response parse, bytes=", label.number(RESPONSE.len()), || {
        let mut scratch = [0u8; 128];
        let reply = ChatResponse::parse(black_box(RESPONSE.as_bytes()), &mut scratch);
        black_box(reply.map(|r| r.blocks().len()).ok());
    });
    match ChatResponse::parse_stream(STREAMED.as_bytes(), &mut scratch) {
        Ok(reply) if reply.blocks().len() == 2 => {}
        Ok(_) => bench.fail("the streamed reply does not read as a text and a call"),
        Err(_) => bench.fail("the streamed reply is refused"),
    }
    let mut label = Label::default();
    bench.report("openai streamed response parse, bytes=", label.number(STREAMED.len()), || {
        let mut scratch = [0u8; 128];
        let reply = ChatResponse::parse_stream(black_box(STREAMED.as_bytes()), &mut scratch);
        black_box(reply.map(|r| r.blocks().len()).ok());
    });
}

/// A number written as a label, with no heap.
#[derive(Default)]
struct Label {
    buf: [u8; 20],
}

impl Label {
    fn number(&mut self, mut n: usize) -> &str {
        let mut at = self.buf.len();
        loop {
            at -= 1;
            self.buf[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        core::str::from_utf8(&self.buf[at..]).unwrap_or("?")
    }
}

/// The phases of the tracked decision where nothing fires, in the order
/// the decision runs them.
fn phases_of_a_decision(
    bench: &impl Meter,
    tracker: &Tracker<'_>,
    conversation: &SliceConversation<'_>,
    input: &StepInput,
    quiet: Timestamp,
) {
    if phases::time(tracker, Some(quiet)) != envaware::TimeDecision::NotDue {
        bench.fail("the quiet decision's time phase is due");
    }
    let phase = |name: &str, case: &mut dyn FnMut()| {
        bench.report("tracked decision phase, messages=128: ", name, case)
    };
    phase("sync (the tracker saw every change)", &mut || {
        black_box(phases::sync(tracker, black_box(conversation)));
    });
    phase("clock", &mut || {
        black_box(phases::clock(black_box(&mut FixedClock::at(quiet))));
    });
    phase("warnings", &mut || {
        black_box(phases::warnings(black_box(tracker)));
    });
    phase("time compare (wall clock, recorded time)", &mut || {
        black_box(phases::time(black_box(tracker), Some(quiet)));
    });
    phase("tasks", &mut || {
        black_box(phases::tasks(black_box(tracker), input));
    });
    phase("context", &mut || {
        black_box(phases::context(black_box(tracker), input));
    });
    phase("tool error (worked out when the newest message was observed)", &mut || {
        black_box(phases::tool_error(black_box(tracker)));
    });
    phase("tool error rule on the newest message (once per observed message)", &mut || {
        black_box(phases::tool_error_on_newest(black_box(tracker), black_box(conversation)));
    });
}

/// The phases of the tracked step that renders the time: its decision,
/// then the hint's rendering, of which formatting the time is a part.
fn phases_of_a_firing_step(
    bench: &impl Meter,
    engine: &Engine<'_>,
    tracker: &Tracker<'_>,
    conversation: &SliceConversation<'_>,
    input: &StepInput,
    due: Timestamp,
) {
    let decision = tracker.decide(conversation, input, Some(due));
    let mut hint = [0u8; 512];
    let phase = |name: &str, case: &mut dyn FnMut()| {
        bench.report("tracked firing step phase, messages=128: ", name, case)
    };
    phase("decide", &mut || {
        black_box(tracker.decide(black_box(conversation), input, Some(due)));
    });
    phase("render (the whole hint)", &mut || {
        let outcome = phases::render(engine, black_box(decision), conversation, &mut (), &mut hint);
        black_box(outcome.map(|o| o.hint.map(str::len)).ok());
    });
    phase("render: format the time", &mut || {
        black_box(phases::format_time(engine, black_box(due), &mut hint));
    });
}

/// The telling of the watched temperature: the oldest hint, told at
/// `RECORDED_AT` (its `created_at`).
static TOLD: [Block<'static>; 1] = [Block::Hint {
    source: Some(DEFAULT_INJECTION_SOURCE),
    text: HintText::Single(TOLD_TEXT),
    created_at: Some(CreatedAt::Instant(Timestamp::from_unix_seconds(RECORDED_AT))),
}];
const TOLD_TEXT: &str = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>\n<temperature>23.0 °C</temperature>\n</system-reminder>";

/// The no-fire tracked decision at 128 messages with a temperature watch,
/// without and with a time rule (`max_interval`): the rule reads the
/// telling's age, a subtraction, and nothing else.
fn watched(bench: &impl Meter, input: &StepInput, quiet: Timestamp) {
    let mut messages = context::<128>();
    messages[0].blocks = &TOLD;
    let conversation = SliceConversation(&messages);
    let readings = [("temperature", "23.4 °C")];
    let live = ExtraFields::Slice(&readings);
    for (label, max_interval) in [("", None), (", max_interval", Interval::from_secs(1800))] {
        let watch = [(
            "temperature",
            Watch { change: Decimal::new(1, 0), max_interval, ..Watch::default() },
        )];
        let config = Config {
            injection: InjectionConfig {
                watch: WatchList::Slice(&watch),
                ..InjectionConfig::default()
            },
            ..Config::default()
        };
        let Ok(engine) = Engine::new(config) else { bench.fail("the watch configuration") };
        let tracker = Tracker::from_conversation(&engine, AGENT, &conversation);
        let decision = tracker.decide_with_readings(&conversation, input, Some(quiet), &live);
        if decision.fires()
            || decision
                != engine.decide_with_readings(
                    &conversation,
                    &input.for_agent(AGENT),
                    Some(quiet),
                    &live,
                )
        {
            bench.fail("the watched quiet decision fires or differs from the scan");
        }
        bench.report("tracked, nothing to inject, messages=128, a watch", label, || {
            black_box(tracker.decide_with_readings(
                black_box(&conversation),
                input,
                Some(quiet),
                &live,
            ));
        });
    }
}
