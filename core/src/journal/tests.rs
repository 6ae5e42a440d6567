extern crate std;

use super::*;
use crate::config::load::ConfigBuf;
use crate::config::watch::WatchList;
use crate::config::Config;
use crate::config::ContextConfig;
use crate::conversation::{HintText, Message as _, Role, ToolResultState};
use crate::engine::Engine;
use crate::wire::BufferFull;
use std::boxed::Box;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

const AGENT: &str = "rover";
type Context<'a> = AgentContext<'a, 6, 24, 1024>;

fn engine() -> Engine<'static> {
    let mut config = Config::default();
    config.context.compression_tool_enabled = true;
    Engine::new(config).unwrap()
}

fn step(cur_iter: u64, pending: u64, tokens: i64) -> StepInput {
    StepInput {
        tasks: TaskCounts { pending, in_progress: 0 },
        cur_iter,
        input_tokens: tokens,
        context_size: 8192,
    }
}

/// What a session does: an event, or a step `minutes` after the start.
enum Op {
    Ev(Event<'static>),
    Step { minutes: i64, cur_iter: u64, pending: u64, tokens: i64 },
}

const START: i64 = 1_784_687_400;

/// Every kind of event, strings with escapes, a list hint, evictions
/// (6 messages) and a compression.
fn session() -> Vec<Op> {
    static PARTS: [&str; 2] = ["<current-time>2026-01-01 00:00:00", "</current-time>"];
    static OBSERVED: [Block<'static>; 3] = [
        Block::Hint { source: Some("runtime"), text: HintText::Parts(&PARTS), created_at: None },
        Block::Other,
        Block::ToolCall { id: "s1", name: "TaskList", input: "{}" },
    ];
    static OWN: [Block<'static>; 2] = [
        Block::Other,
        Block::ToolResult { id: "x", name: "Drive", state: ToolResultState::Denied, output: "" },
    ];
    let call = |id, input| Op::Ev(Event::ToolCall { id, name: "Drive", input });
    let result = |id, state| Op::Ev(Event::ToolResult { id, name: "Drive", state });
    let mut ops = Vec::from([
        Op::Ev(Event::User { name: "operator \"ops\"", text: "Check the vents, please." }),
        Op::Step { minutes: 0, cur_iter: 0, pending: 2, tokens: 900 },
        call("c1", "{\"metres\": 2,\n \"note\": \"é😀\\\\\"}"),
        result("c1", ToolResultState::Error),
        call("c2", "{\"metres\":2}"),
        result("c2", ToolResultState::Error),
        call("c3", " {\"metres\": 2}"),
        result("c3", ToolResultState::Error),
        Op::Step { minutes: 1, cur_iter: 1, pending: 2, tokens: 7000 },
        Op::Ev(Event::Message { role: Role::System, name: "sys", blocks: &OBSERVED }),
        Op::Ev(Event::Assistant(&OWN)),
        Op::Ev(Event::Reply),
        result("c3", ToolResultState::Running),
        Op::Step { minutes: 40, cur_iter: 0, pending: 1, tokens: 7000 },
    ]);
    for i in 0..6 {
        ops.push(Op::Ev(Event::User { name: "operator", text: "" }));
        ops.push(Op::Step { minutes: 41 + i, cur_iter: 0, pending: 1, tokens: 100 });
        ops.push(call("c4", "{}"));
    }
    ops.push(Op::Ev(Event::Compress { keep: 2 }));
    ops.push(Op::Step { minutes: 80, cur_iter: 1, pending: 0, tokens: 100 });
    ops
}

fn now(minutes: i64) -> Option<Timestamp> {
    Some(Timestamp::from_unix_seconds(START + 60 * minutes))
}

/// Runs `ops` live through a journal, returning the items written and
/// each step's hint.
fn run_live(
    context: &mut Context<'_>,
    journal: &mut Journal<6>,
    ops: &[Op],
    log: &mut Vec<Vec<u8>>,
) -> Vec<Option<String>> {
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let mut hints = Vec::new();
    for op in ops {
        match op {
            Op::Ev(event) => {
                let items = journal.record(context, event, &mut buf).unwrap();
                log.extend(items.iter(&buf).map(<[u8]>::to_vec));
            }
            Op::Step { minutes, cur_iter, pending, tokens } => {
                let step = step(*cur_iter, *pending, *tokens);
                let (outcome, items) = journal
                    .step(context, &step, now(*minutes), &mut (), &mut hint, &mut buf)
                    .unwrap();
                hints.push(outcome.hint.map(str::to_string));
                log.extend(items.iter(&buf).map(<[u8]>::to_vec));
            }
        }
    }
    hints
}

fn restore<'e>(
    engine: &Engine<'e>,
    log: &[Vec<u8>],
) -> Result<(Context<'e>, Journal<6>), LogError> {
    restore_with(engine, log)
}

fn started(context: &Context<'_>) -> (Journal<6>, Vec<Vec<u8>>) {
    let mut journal = Journal::new(context);
    let mut buf = [0u8; 1024];
    let n = journal.start(context, &mut buf).unwrap();
    (journal, Vec::from([buf[..n].to_vec()]))
}

/// The whole state, once both contexts have made the same decision
/// (which sets `messages_read`).
fn state(context: &mut Context<'_>) -> String {
    context.decide(&step(2, 1, 100), now(500));
    format!("{context:?}")
}

/// Runs `ops` live, returning the log and, after each item, the state the
/// live context was in (a `compress` note changes no message: the state
/// after an event and its note is the same).
fn states_after_each_item(engine: &Engine<'_>, ops: &[Op]) -> (Vec<Vec<u8>>, Vec<String>) {
    let mut live = Context::new(engine, AGENT);
    let (mut journal, mut log) = started(&live);
    let mut states = Vec::from([state(&mut live.clone())]);
    for op in ops {
        run_live(&mut live, &mut journal, core::slice::from_ref(op), &mut log);
        let now = state(&mut live.clone());
        states.resize(log.len(), now);
    }
    (log, states)
}

#[test]
fn a_restored_context_is_the_context_before_the_reset_at_every_item() {
    let engine = engine();
    let ops = session();
    let (log, states) = states_after_each_item(&engine, &ops);
    assert!(log.len() > 30);
    // Every prefix of the log: the context the same events built live,
    // its hints rendered again byte for byte.
    for cut in 1..=log.len() {
        let (mut restored, journal) = restore(&engine, &log[..cut]).unwrap();
        assert_eq!(journal.restored_events() as usize, cut - 1);
        assert_eq!(state(&mut restored), states[cut - 1], "after {cut} items");
    }
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut again) = started(&live);
    let hints = run_live(&mut live, &mut journal, &ops, &mut again);
    assert!(live.store().evicted_total() > 0, "the session evicts");
    let (restored, _) = restore(&engine, &log).unwrap();
    // The hints the context holds are the live ones: rendered again from
    // the step items, never read back as text.
    let held: Vec<String> = (0..restored.len())
        .filter_map(|i| restored.newest(i))
        .filter(|m| m.role() == Role::Assistant)
        .flat_map(|m| {
            (0..m.block_count())
                .filter_map(|b| match m.block(b) {
                    Some(Block::Hint { source, text, .. })
                        if source == Some(engine.config().config().injection.injection_source) =>
                    {
                        Some(text.parts().concat())
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!held.is_empty());
    for hint in &held {
        assert!(hints.iter().flatten().any(|h| h == hint), "{hint}");
    }
}

#[test]
fn decisions_after_a_restore_are_those_of_the_uninterrupted_session() {
    let engine = engine();
    let ops = session();
    for split in [1, 2, 9, 14, 20, ops.len() - 1] {
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        run_live(&mut live, &mut journal, &ops[..split], &mut log);
        let (mut restored, mut journal) = restore(&engine, &log).unwrap();
        let steps = ops[..split].iter().filter(|op| matches!(op, Op::Step { .. })).count() as u64;
        assert_eq!(journal.steps(), steps, "split at {split}");
        let mut uninterrupted = Context::new(&engine, AGENT);
        let (mut j, mut l) = started(&uninterrupted);
        let before = run_live(&mut uninterrupted, &mut j, &ops[..split], &mut l);
        let after = run_live(&mut uninterrupted, &mut j, &ops[split..], &mut l);
        assert_eq!(
            run_live(&mut restored, &mut journal, &ops[split..], &mut log),
            after,
            "split at {split}"
        );
        assert!(before.iter().chain(&after).filter(|h| h.is_some()).count() >= 4);
        assert_eq!(state(&mut restored), state(&mut uninterrupted));
        // The restore read the clock back, so the log goes on with the
        // items an uninterrupted device writes (an `advance`, not a new
        // `set_clock`).
        assert_eq!(log, l, "split at {split}");
        assert_eq!(journal.clock(), j.clock());
    }
}

/// The split step (`decide`, then `render_step`) writes the items and
/// makes the hints `step` does, and leaves the same context.
#[test]
fn the_split_step_logs_what_the_whole_step_logs() {
    let engine = engine();
    let ops = session();
    let (mut whole, mut split) = (Context::new(&engine, AGENT), Context::new(&engine, AGENT));
    let (mut whole_journal, mut whole_log) = started(&whole);
    let whole_hints = run_live(&mut whole, &mut whole_journal, &ops, &mut whole_log);
    let (mut journal, mut log) = started(&split);
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let mut hints = Vec::new();
    for op in &ops {
        match op {
            Op::Ev(event) => {
                let items = journal.record(&mut split, event, &mut buf).unwrap();
                log.extend(items.iter(&buf).map(<[u8]>::to_vec));
            }
            Op::Step { minutes, cur_iter, pending, tokens } => {
                let step = step(*cur_iter, *pending, *tokens);
                let decision = journal.decide(&mut split, &step, now(*minutes), &());
                let (outcome, items) = journal
                    .render_step(&mut split, decision, &step, &mut (), &mut hint, &mut buf)
                    .unwrap();
                hints.push(outcome.hint.map(str::to_string));
                log.extend(items.iter(&buf).map(<[u8]>::to_vec));
            }
        }
    }
    assert_eq!(hints, whole_hints);
    assert_eq!(log, whole_log);
    assert_eq!(state(&mut split), state(&mut whole));
    // An item that does not fit: nothing counted, nothing appended, the
    // next step logs as before.
    let step = step(0, 3, 100);
    let decision = journal.decide(&mut split, &step, now(90), &());
    let before = state(&mut split.clone());
    let error = journal
        .render_step(&mut split, decision, &step, &mut (), &mut hint, &mut [0u8; 4])
        .unwrap_err();
    assert_eq!(error, RecordError::BufferFull(BufferFull { capacity: 4 }));
    assert_eq!((state(&mut split.clone()), journal.items() as usize), (before, log.len()));
    let (_, items) =
        journal.render_step(&mut split, decision, &step, &mut (), &mut hint, &mut buf).unwrap();
    let first = items.iter(&buf).next().unwrap();
    assert_eq!(first[..3], [ItemKind::Step.byte(), log.len() as u8, 0]);
}

/// The entry of `item`, read with the test engine's (empty) watch list.
fn entry_of(item: &[u8]) -> String {
    let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
    format!("{:?}", decode(item, &WatchList::EMPTY, &mut blocks).unwrap())
}

#[test]
fn items_are_the_documented_bytes() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session()[..9], &mut log);
    // docs/reboot.md, "The items": a kind byte, the number's low 16 bits,
    // then the fields; strings are a LEB128 length and UTF-8.
    let mut user = Vec::from([2, 1, 0, 14]);
    user.extend_from_slice(b"operator \"ops\"");
    user.push(24);
    user.extend_from_slice(b"Check the vents, please.");
    assert_eq!(log[1], user);
    let input = "{\"metres\": 2,\n \"note\": \"é😀\\\\\"}";
    let mut call = Vec::from([5, 3, 0, 2, b'c', b'1', 5, b'D', b'r', b'i', b'v', b'e']);
    call.push(input.len() as u8);
    call.extend_from_slice(input.as_bytes());
    assert_eq!(log[3], call);
    assert_eq!(log[4], [6, 4, 0, 1, 2, b'c', b'1', 5, b'D', b'r', b'i', b'v', b'e']);
    // The first step says everything (nothing was said since the header),
    // its clock in whole milliseconds as it fired (time and tasks).
    let mut first = Vec::from([9, 2, 0, 0xCE, 0x03]);
    let mut o = [0u8; 10];
    let mut out = binary::Out::new(&mut o);
    out.varint(1_784_687_400_000);
    let n = out.finish().unwrap();
    first.extend_from_slice(&o[..n]);
    // tokens 900 (zigzag), tasks 2 and 0, context size 8192 (zigzag),
    // decided: time and tasks, no live field told.
    first.extend_from_slice(&[0x88, 0x0E, 2, 0, 0x80, 0x80, 0x01, 0b11, 0]);
    assert_eq!(log[2], first);
    assert_eq!(
        entry_of(&log[2]),
        "(2, Step(StepRecord { clock: Set(Timestamp(1784687400000000)), cur_iter: None, tokens: Some(900), \
         tasks: Some(TaskCounts { pending: 2, in_progress: 0 }), context_size: Some(8192), readings: None, \
         decided: Some(Decided { time: true, tasks: true, context: None, tool_error: None, watch: WatchSet { fired: 0, heartbeat: 0, throttled: 0 } }), told: [], undelivered: None }))"
    );
    // A minute later, nothing fires: the clock advances by 60 whole
    // seconds, the tokens changed (zigzag 7000), the iteration is the one
    // the replay assumes: 7 bytes.
    assert_eq!(log[9], [9, 9, 0, 0b1001, 60, 0xB0, 0x6D]);
    // The header: kind, number (low 16 bits, then high), version, hash,
    // capacities, live items, steps, agent, and the settings' JSON.
    assert_eq!(log[0][..6], [1, 0, 0, 0, 0, VERSION as u8]);
    assert_eq!(log[0][6..14], journal.header().config.to_le_bytes());
    assert_eq!(log[0][14..22], [6, 24, 0x80, 0x08, 0, 0, 5, b'r']);
    assert!(log[0].ends_with(br#"{"agent_name":"rover","injection_config":{},"context_config":{"compression_tool_enabled":true}}"#));
    assert_eq!(log.len(), 10);
}

/// Steps at these instants (microseconds from `START`; `None`: the clock
/// does not know), each after a user message so that some fire.
fn steps_at_instants(
    context: &mut Context<'_>,
    journal: &mut Journal<6>,
    instants: &[Option<i64>],
    log: &mut Vec<Vec<u8>>,
) {
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    for (i, at) in instants.iter().enumerate() {
        let now = at.map(|us| Timestamp(START * 1_000_000 + us));
        let (_, items) = journal
            .step(context, &step(i as u64, 0, 100), now, &mut (), &mut hint, &mut buf)
            .unwrap();
        log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    }
}

#[test]
fn a_step_s_clock_is_written_as_its_change_and_read_back_to_the_microsecond() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    // The first step fires (the time): its instant in whole ms. Then:
    // the same instant, 60 s on, 1.5 s on, 250 µs on, 30 s back, unknown,
    // and past the time interval (fires again) at a sub-ms instant.
    let instants = [
        Some(0),
        Some(0),
        Some(60_000_000),
        Some(61_500_000),
        Some(61_500_250),
        Some(31_500_250),
        None,
        Some(7_200_000_001),
    ];
    steps_at_instants(&mut live, &mut journal, &instants, &mut log);
    let clocks: Vec<String> = log[1..]
        .iter()
        .map(|item| {
            let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
            match decode(item, &WatchList::EMPTY, &mut blocks).unwrap().1 {
                Entry::Step(step) => format!("{:?}", step.clock),
                other => format!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(
        clocks,
        [
            "Set(Timestamp(1784687400000000))",
            "Same",
            "Advance(60000000)",
            "Advance(1500000)",
            "Advance(250)",
            "Advance(-30000000)",
            "Unknown",
            "Set(Timestamp(1784694600000001))",
        ]
    );
    // A restore follows the clock through every form, to the microsecond,
    // and the next step writes what the uninterrupted one writes.
    for cut in 1..=log.len() {
        let (_, restored) = restore(&engine, &log[..cut]).unwrap();
        let said = instants[..cut - 1].last().copied().flatten();
        assert_eq!(restored.clock(), said.map(|us| Timestamp(START * 1_000_000 + us)), "{cut}");
    }
    // A change from a clock the log never said is unknown.
    let said = Said::default();
    let moved = StepRecord { clock: ClockChange::Advance(60), ..StepRecord::default() };
    assert_eq!(said.resolve(&moved).1, None);
}

/// One live field, as a device's sensor.
struct Thermometer(String);

impl LiveFields for Thermometer {
    fn len(&self) -> usize {
        1
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        (i == 0).then_some(("temperature", self.0.as_str()))
    }
}

/// Steps a minute apart at these temperatures, through `journal`.
fn steps_at(
    context: &mut Context<'_>,
    journal: &mut Journal<6>,
    from: i64,
    temperatures: &[&str],
    log: &mut Vec<Vec<u8>>,
) {
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    for (i, t) in temperatures.iter().enumerate() {
        let minutes = from + i as i64;
        let mut live = Thermometer(t.to_string());
        let (_, items) = journal
            .step(
                context,
                &step(minutes as u64, 1, 100),
                now(minutes),
                &mut live,
                &mut hint,
                &mut buf,
            )
            .unwrap();
        log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    }
}

/// The test configuration with a temperature watch (a change of 1).
fn watching_engine() -> Engine<'static> {
    let watch = Watch { change: Decimal::new(1, 0), ..Watch::default() };
    let mut config = Config::default();
    config.context.compression_tool_enabled = true;
    config.injection.watch = WatchList::Slice(Box::leak(Box::new([("temperature", watch)])));
    Engine::new(config).unwrap()
}

/// Each step item's watched readings, as its item holds them.
fn readings_logged(engine: &Engine<'_>, log: &[Vec<u8>]) -> Vec<Option<Option<String>>> {
    let watches = engine.config().config().injection.watch;
    log.iter()
        .filter_map(|item| {
            let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
            match decode(item, &watches, &mut blocks).unwrap().1 {
                Entry::Step(step) => Some(step.readings.map(|r| r.get(0).map(str::to_string))),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn watched_values_are_logged_where_they_changed_and_survive_a_restore() {
    let engine = watching_engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    let mut buf = [0u8; 64];
    let items =
        journal.record(&mut live, &Event::User { name: "operator", text: "" }, &mut buf).unwrap();
    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    steps_at(&mut live, &mut journal, 0, &["21.5 °C", "21.5 °C", "22 \"C\"", "22 \"C\""], &mut log);
    // The first step fires (time, tasks, the watch): it says its reading.
    // The second reads the same, the third a change too small to fire.
    let some = |t: &str| Some(Some(t.to_string()));
    assert_eq!(readings_logged(&engine, &log), [some("21.5 °C"), None, some("22 \"C\""), None]);
    // A restore knows what the log said last: the same temperature is
    // not written again, a new one is, as without the reset.
    let (mut restored, mut restored_journal) = restore(&engine, &log).unwrap();
    let mut continued = log.clone();
    steps_at(&mut restored, &mut restored_journal, 4, &["22 \"C\"", "23.5 °C"], &mut continued);
    steps_at(&mut live, &mut journal, 4, &["22 \"C\"", "23.5 °C"], &mut log);
    assert_eq!(continued, log);
    assert_eq!(readings_logged(&engine, &log)[4..], [None, some("23.5 °C")]);
    // A reading of a watch the configuration does not have is refused.
    let mut damaged = log.clone();
    let last = damaged.len() - 1;
    let at = damaged[last].iter().position(|&b| b == 0b1).unwrap();
    damaged[last][at] = 0b10;
    let index = damaged.len() - 1;
    assert!(
        matches!(error_of_with(&engine, &damaged), LogError { index: i, kind: ItemError::Field(_) } if i as usize == index)
    );
}

/// Two live fields, as the firmware's temperature and uptime.
struct TwoFields(&'static str, &'static str);

impl LiveFields for TwoFields {
    fn len(&self) -> usize {
        2
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        [("temperature", self.0), ("uptime", self.1)].get(i).copied()
    }
}

#[test]
fn a_firing_step_tells_every_live_field_and_its_watched_value_once() {
    let engine = watching_engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let items =
        journal.record(&mut live, &Event::User { name: "operator", text: "" }, &mut buf).unwrap();
    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    let mut fields = TwoFields("21.5 °C", "7.818 s");
    let (outcome, items) = journal
        .step(&mut live, &step(0, 1, 100), now(0), &mut fields, &mut hint, &mut buf)
        .unwrap();
    let hint = outcome.hint.unwrap().to_string();
    assert!(hint.contains("<temperature>21.5 °C</temperature>\n<uptime>7.818 s</uptime>"));
    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    let item = &log[2];
    let count = |what: &[u8]| item.windows(what.len()).filter(|w| *w == what).count();
    // The watch's name is its index, its value the reading said once.
    assert_eq!((count("21.5 °C".as_bytes()), count(b"temperature")), (1, 0));
    assert_eq!((count(b"uptime"), count(b"7.818 s")), (1, 1));
    let watches = engine.config().config().injection.watch;
    let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
    let Entry::Step(record) = decode(item, &watches, &mut blocks).unwrap().1 else { panic!() };
    assert_eq!(
        (0..record.told.len()).filter_map(|i| record.told.field(i)).collect::<Vec<_>>(),
        [("temperature", "21.5 °C"), ("uptime", "7.818 s")]
    );
    // The restore renders the same hint from them.
    let (restored, _) = restore_with(&engine, &log).unwrap();
    assert_eq!(format!("{:?}", restored.store()), format!("{:?}", live.store()));
    assert!(format!("{:?}", restored.store()).contains("7.818 s"));
    // More live fields than a restore reads back: refused, nothing logged.
    struct Many;
    impl LiveFields for Many {
        fn len(&self) -> usize {
            MAX_TOLD_FIELDS + 1
        }
        fn field(&self, i: usize) -> Option<(&str, &str)> {
            (i < self.len()).then_some(("f", "v"))
        }
    }
    let mut again = Context::new(&engine, AGENT);
    let (mut journal, _) = started(&again);
    journal.record(&mut again, &Event::User { name: "operator", text: "" }, &mut buf).unwrap();
    let error = journal
        .step(&mut again, &step(0, 1, 100), now(0), &mut Many, &mut [0u8; 1024], &mut buf)
        .unwrap_err();
    assert_eq!(error, RecordError::TooManyLiveFields { fields: MAX_TOLD_FIELDS + 1 });
    assert_eq!((journal.items(), again.len()), (2, 1));
}

fn restore_with<'e>(
    engine: &Engine<'e>,
    log: &[Vec<u8>],
) -> Result<(Context<'e>, Journal<6>), LogError> {
    let mut context = Context::new(engine, AGENT);
    let mut journal = Journal::new(&context);
    let mut scratch = [0u8; 2048];
    for item in log {
        journal.check(item)?;
    }
    for item in log {
        journal.restore(&mut context, item, &mut scratch)?;
    }
    Ok((context, journal))
}

fn error_of_with(engine: &Engine<'_>, log: &[Vec<u8>]) -> LogError {
    restore_with(engine, log).expect_err("the log is refused")
}

fn error_of(log: &[Vec<u8>]) -> LogError {
    error_of_with(&engine(), log)
}

#[test]
fn a_damaged_log_is_a_typed_error_naming_the_item() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session(), &mut log);
    let kind = |item: &Vec<u8>| ItemKind::of(item[0]).unwrap();
    let first = |k: ItemKind| log.iter().position(|i| kind(i) == k).unwrap();
    let (user, call, result) =
        (first(ItemKind::User), first(ItemKind::ToolCall), first(ItemKind::ToolResult));
    // A kind no item has.
    let mut flipped = log.clone();
    flipped[call][0] = 0xEE;
    let e = error_of(&flipped);
    assert_eq!(e, LogError { index: call as u32, kind: ItemError::UnknownEvent });
    assert_eq!(e.to_string(), format!("log item {call}: unknown kind of item"));
    // A state out of range; a string that is not UTF-8.
    let mut flipped = log.clone();
    flipped[result][3] = 9;
    assert_eq!(
        error_of(&flipped),
        LogError { index: result as u32, kind: ItemError::Field("state") }
    );
    let mut flipped = log.clone();
    flipped[user][5] = 0xFF;
    assert_eq!(error_of(&flipped), LogError { index: user as u32, kind: ItemError::NotUtf8 });
    // Cut short, or a byte too many.
    let mut truncated = log.clone();
    truncated[call].pop();
    assert_eq!(
        error_of(&truncated),
        LogError { index: call as u32, kind: ItemError::Field("input") }
    );
    let mut longer = log.clone();
    longer[call].push(0);
    let e = error_of(&longer);
    assert_eq!(e, LogError { index: call as u32, kind: ItemError::TrailingBytes { count: 1 } });
    assert_eq!(e.to_string(), format!("log item {call}: 1 bytes after its last field"));
    // A lost item: the numbers have a gap.
    let mut lost = log.clone();
    lost.remove(5);
    assert_eq!(
        error_of(&lost),
        LogError { index: 5, kind: ItemError::Gap { expected: 5, found: 6 } }
    );
    assert_eq!(
        error_of(&lost).to_string(),
        "log item 5: item number 6, expected 5: an item was lost"
    );
    // No header.
    let headless = &log[1..];
    assert_eq!(
        error_of(headless),
        LogError { index: headless.len() as u32, kind: ItemError::MissingHeader }
    );
    // An item of the text form (format versions 1 and 2): its header names
    // its version, any other item is refused as text.
    let mut text = log.clone();
    text[3] = br##"{"#":3,"reply":null}"##.to_vec();
    let e = error_of(&text);
    assert_eq!(e, LogError { index: 3, kind: ItemError::TextForm });
    assert_eq!(
        e.to_string(),
        "log item 3: an item of the text form of format versions 1 and 2 (JSON): this build reads version 3"
    );
    let mut old = log.clone();
    old[0] = br##"{"#":0,"log":{"version":2,"config":"c604efd021b487ac","capacity":[6,24,1024],"live":0,"agent":"rover"}}"##.to_vec();
    let e = error_of(&old);
    assert_eq!(e, LogError { index: 0, kind: ItemError::Version { found: 2 } });
    assert_eq!(e.to_string(), "log item 0: log format version 2, this build reads 3");
}

/// The one reader of items ([`ItemReader`], which [`Journal::check`] runs)
/// follows the numbers by their low 16 bits, learns the whole number from a
/// header, and refuses a gap, also across a wrap of a number out of `u32`.
#[test]
fn the_one_reader_of_items_follows_whole_numbers_and_refuses_a_gap() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session(), &mut log);
    // A reply numbered 0xFFFF, then 0: the low bits wrap.
    let mut reader = ItemReader::new();
    let head = reader.read(&[7, 0xFF, 0xFF]).unwrap();
    assert_eq!((head.seq, head.number, head.kind), (0xFFFF, None, ItemKind::Reply));
    let e = reader.read(&[7, 1, 0]).unwrap_err();
    assert_eq!(e, LogError { index: 1, kind: ItemError::Gap { expected: 0, found: 1 } });
    assert_eq!(reader.read(&[7, 0, 0]).unwrap().seq, 0);
    // A header says its whole number: 0x0001_0001, the items before it
    // learn theirs (0xFFFF was 0x0000_FFFF).
    let mut header = log[0].clone();
    header[1..5].copy_from_slice(&[1, 0, 1, 0]);
    let head = reader.read(&header).unwrap();
    assert_eq!((head.number, reader.first_number()), (Some(0x0001_0001), Some(0xFFFF)));
    assert_eq!(reader.read(&[7, 2, 0]).unwrap().number, Some(0x0001_0002));
    // A header whose whole number is not its position's: a gap of 2^16.
    let mut far = header.clone();
    far[3..5].copy_from_slice(&[2, 0]);
    far[1..3].copy_from_slice(&[3, 0]);
    let e = reader.read(&far).unwrap_err();
    assert_eq!(
        e,
        LogError { index: 4, kind: ItemError::Gap { expected: 0x0001_0003, found: 0x0002_0003 } }
    );
    // Numbers wrap at 2^32, as the journal writes them.
    let mut reader = ItemReader::new();
    let mut last = log[0].clone();
    last[1..5].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
    assert_eq!(reader.read(&last).unwrap().number, Some(u32::MAX));
    assert_eq!(reader.read(&[7, 0, 0]).unwrap().number, Some(0));
    // Too short, or text.
    assert_eq!(ItemReader::new().read(&[7, 0]).unwrap_err().kind, ItemError::Field("number"));
    assert_eq!(ItemReader::new().read(b"{}").unwrap_err().kind, ItemError::TextForm);
    // The reader and the check pass agree on every item of a real log.
    let mut reader = ItemReader::new();
    let mut check = Journal::new(&Context::new(&engine, AGENT));
    for item in &log {
        assert_eq!(reader.read(item).map(drop), check.check(item));
    }
    assert_eq!(reader.first_number(), Some(0));
}

#[test]
fn a_log_of_another_configuration_or_version_is_refused_before_anything_is_applied() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session(), &mut log);
    let expected = journal.header().config;
    // Another configuration, another agent, another capacity.
    let mut config = Config::default();
    config.context = ContextConfig { trigger_ratio: 0.7, ..config.context };
    let other = Engine::new(config).unwrap();
    let others = [
        Header::of(&Context::new(&other, AGENT)).config,
        Header::of(&Context::new(&engine, "scout")).config,
        Header::of(&AgentContext::<'_, 6, 24, 1000>::new(&engine, AGENT)).config,
    ];
    for found in others {
        assert_ne!(found, expected);
        let mut foreign = log.clone();
        foreign[0][6..14].copy_from_slice(&found.to_le_bytes());
        let e = error_of(&foreign);
        assert_eq!(e, LogError { index: 0, kind: ItemError::Config { found, expected } });
        assert_eq!(e.to_string(), format!("log item 0: written for configuration {found:016x}, this context is {expected:016x}"));
    }
    let mut newer = log.clone();
    newer[0][5] = 4;
    assert_eq!(error_of(&newer), LogError { index: 0, kind: ItemError::Version { found: 4 } });
    assert_eq!(
        error_of(&newer).to_string(),
        "log item 0: log format version 4, this build reads 3"
    );
    // Restoring without the check pass is refused too.
    let mut context = Context::new(&engine, AGENT);
    let mut fresh = Journal::new(&context);
    let e = fresh.restore(&mut context, &log[0], &mut [0u8; 16]).unwrap_err();
    assert_eq!(e, LogError { index: 0, kind: ItemError::MissingHeader });
    assert!(context.is_empty());
}

#[test]
fn recording_errors_leave_the_context_and_the_log_unchanged() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, _) = started(&live);
    let before = (state(&mut live), journal.items());
    let e = journal
        .record(&mut live, &Event::User { name: "operator", text: "" }, &mut [0u8; 8])
        .unwrap_err();
    assert_eq!(e, RecordError::BufferFull(BufferFull { capacity: 8 }));
    let long = "x".repeat(2000);
    let e = journal
        .record(&mut live, &Event::User { name: &long, text: "" }, &mut [0u8; 4096])
        .unwrap_err();
    assert_eq!(
        e,
        RecordError::Step(StepError::Store(StoreError::TooMuchText {
            needed: 2000,
            capacity: 1024
        }))
    );
    let e = journal
        .step(&mut live, &step(0, 1, 0), now(0), &mut (), &mut [0u8; 8], &mut [0u8; 1024])
        .unwrap_err();
    assert!(matches!(e, RecordError::Step(StepError::HintTooLong(_))), "{e}");
    assert_eq!((state(&mut live), journal.items()), before);
    // The next item follows the last one written.
    let mut buf = [0u8; 128];
    let items = journal.record(&mut live, &Event::Reply, &mut buf).unwrap();
    assert_eq!(items.iter(&buf).collect::<Vec<_>>(), [[7, 1, 0]]);
}

/// The log is compacted to the items that created the messages the
/// context holds, and on: a cut at any point of the compaction restores
/// the same context, which decides as the uninterrupted one.
#[test]
fn compaction_keeps_what_the_context_holds_at_every_cut() {
    let engine = engine();
    let ops = session();
    for split in [3, 14, 23, ops.len() - 3] {
        let mut live = Context::new(&engine, AGENT);
        let (mut journal, mut log) = started(&live);
        run_live(&mut live, &mut journal, &ops[..split], &mut log);
        let dead = journal.dead_items() as usize;
        assert!(dead >= 1 && dead < log.len());
        let mut buf = [0u8; 1024];
        let n = journal.compaction_header(&live, &mut buf).unwrap();
        log.push(buf[..n].to_vec());
        let mut uninterrupted = Context::new(&engine, AGENT);
        let (mut j, mut l) = started(&uninterrupted);
        run_live(&mut uninterrupted, &mut j, &ops[..split], &mut l);
        let after =
            run_live(&mut uninterrupted.clone(), &mut j.clone(), &ops[split..], &mut l.clone());
        for popped in 0..=dead {
            let (mut restored, mut rj) = restore(&engine, &log[popped..]).unwrap();
            assert_eq!(
                restored.store().len(),
                live.store().len(),
                "split {split}, popped {popped}"
            );
            // However many items were popped, the session's steps are known.
            let steps =
                ops[..split].iter().filter(|op| matches!(op, Op::Step { .. })).count() as u64;
            assert_eq!(
                (rj.steps(), journal.steps()),
                (steps, steps),
                "split {split}, popped {popped}"
            );
            assert!(rj.steps() >= 1);
            for i in 0..live.len() {
                assert_eq!(format!("{:?}", restored.newest(i)), format!("{:?}", live.newest(i)));
            }
            let mut rest = log[popped..].to_vec();
            assert_eq!(
                run_live(&mut restored, &mut rj, &ops[split..], &mut rest),
                after,
                "split {split}, popped {popped}"
            );
        }
        journal.popped(dead as u32);
        assert_eq!(journal.dead_items(), 0);
        assert_eq!(journal.items() as usize, log.len() - dead);
    }
}

#[test]
fn the_header_hash_is_pinned_by_its_documented_encoding() {
    // docs/reboot.md, "The header": fixed-width little-endian input, so a
    // 32-bit device and a 64-bit host agree. A change of this value is a
    // change of the log format: raise `VERSION`.
    let mut config = Config::default();
    let watch = [(
        "temperature",
        Watch {
            change: Decimal::new(2, 0),
            above: Decimal::new(28, 0),
            below: None,
            hysteresis: Decimal::new(5, 1).unwrap(),
            ..Default::default()
        },
    )];
    config.injection.watch = WatchList::Slice(&watch);
    let header = Header::for_session(&config, "Sprout", [16, 48, 4096]);
    assert_eq!(format!("{:016x}", header.config), "c604efd021b487ac");
    assert_eq!(header.capacity, [16, 48, 4096]);
    assert_eq!(header.version, VERSION);
    // Each part counts: the agent, a capacity, a watch bound.
    assert_ne!(Header::for_session(&config, "Sprouts", [16, 48, 4096]), header);
    assert_ne!(Header::for_session(&config, "Sprout", [16, 48, 4097]).config, header.config);
    // A time rule counts; a watch with none hashes as before it existed.
    let mut timed = watch;
    timed[0].1.max_interval = crate::config::watch::Interval::from_secs(1800);
    config.injection.watch = WatchList::Slice(&timed);
    assert_ne!(Header::for_session(&config, "Sprout", [16, 48, 4096]).config, header.config);
    config.injection.watch = WatchList::EMPTY;
    assert_ne!(Header::for_session(&config, "Sprout", [16, 48, 4096]).config, header.config);
}

/// A store in memory that refuses its appends numbered in `refuse`
/// (counted from 0, refused or not).
#[derive(Default)]
struct Items {
    items: Vec<Vec<u8>>,
    appends: usize,
    refuse: Vec<usize>,
    /// The outbox's mark it reports ([`ItemStore::delivered`]).
    mark: Option<u32>,
}

impl ItemStore for Items {
    type Error = usize;
    async fn append(&mut self, item: &[u8]) -> Result<(), usize> {
        let n = self.appends;
        self.appends += 1;
        if self.refuse.contains(&n) {
            return Err(n);
        }
        self.items.push(item.to_vec());
        Ok(())
    }

    fn delivered(&self) -> Option<u32> {
        self.mark
    }
}

type Logged<'e> = Session<'e, 6, 24, 1024>;

/// Runs `op` on `session`: its hint when a step.
fn run_op(
    session: &mut Logged<'_>,
    op: &Op,
    store: &mut Items,
) -> Result<Option<String>, SessionError<usize>> {
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    embassy_futures::block_on(async {
        match op {
            Op::Ev(event) => session.record(event, &mut buf, store).await.map(|()| None),
            Op::Step { minutes, cur_iter, pending, tokens } => {
                let step = step(*cur_iter, *pending, *tokens);
                let outcome =
                    session.step(&step, now(*minutes), &mut (), &mut hint, &mut buf, store).await?;
                Ok(outcome.hint.map(str::to_string))
            }
        }
    })
}

fn started_session<'e>(engine: &Engine<'e>, store: &mut Items) -> Logged<'e> {
    let mut buf = [0u8; 256];
    let mut session = Logged::new(engine, AGENT);
    embassy_futures::block_on(session.start(&mut buf, store)).unwrap();
    session
}

fn restore_session<'e>(engine: &Engine<'e>, items: &[Vec<u8>]) -> Result<Logged<'e>, LogError> {
    let mut scratch = [0u8; 2048];
    Logged::restore(engine, AGENT, items.iter().map(Vec::as_slice), &mut scratch)
}

/// The messages a context holds, and its next decision.
fn held(context: &Context<'_>) -> String {
    let mut context = context.clone();
    let decision = context.decide(&step(2, 1, 100), now(500));
    format!("{:?} {decision:?}", context.store())
}

#[test]
fn a_session_logs_what_the_journal_logs_and_restores_where_the_reply_stood() {
    let engine = engine();
    let ops = session();
    let mut context = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&context);
    let hints = run_live(&mut context, &mut journal, &ops, &mut log);

    let mut store = Items::default();
    let mut session = started_session(&engine, &mut store);
    let mut at = Vec::new();
    let mut session_hints = Vec::new();
    for op in &ops {
        if let Some(hint) = run_op(&mut session, op, &mut store).unwrap() {
            session_hints.push(Some(hint));
        } else if matches!(op, Op::Step { .. }) {
            session_hints.push(None);
        }
        at.push((store.items.len(), session.reply(), held(session.context())));
    }
    assert_eq!(store.items, log, "the same items as the journal's record and step");
    assert_eq!(session_hints, hints);
    assert_eq!(held(session.context()), held(&context));
    // After every event: the restored session is the live one, and says
    // where the reply stood.
    for (n, reply, messages) in at {
        let restored = restore_session(&engine, &store.items[..n]).unwrap();
        assert_eq!(restored.reply(), reply, "after {n} items");
        assert_eq!(held(restored.context()), messages, "after {n} items");
    }
    let reply = session.reply();
    assert_eq!(reply.next_iter, Some(2));
    assert_eq!(reply.tasks, Some(TaskCounts { pending: 0, in_progress: 0 }));
    assert_eq!((reply.input_tokens, reply.context_size), (Some(100), Some(8192)));
    assert_eq!(reply.clock, Some(now(80)));
    assert_eq!(reply.steps, 10);
}

#[test]
fn a_refused_append_leaves_the_context_as_it_was_and_the_log_restores_it() {
    let engine = engine();
    let ops = session();
    let mut clean = Items::default();
    let mut live = started_session(&engine, &mut clean);
    for op in &ops {
        run_op(&mut live, op, &mut clean).unwrap();
    }
    let appends = clean.appends;
    let mut refused = 0;
    // Every append of the session refused once, in turn.
    for k in 1..appends {
        let mut store = Items { refuse: Vec::from([k]), ..Items::default() };
        let mut session = started_session(&engine, &mut store);
        for op in &ops {
            let before = session.clone();
            let items = store.items.len();
            match run_op(&mut session, op, &mut store) {
                Ok(_) => {}
                Err(SessionError::Append(n)) => {
                    assert_eq!(n, k);
                    refused += 1;
                    assert_eq!(held(session.context()), held(before.context()), "append {k}");
                    // Nothing of the refused call stays in the log.
                    assert_eq!(store.items.len(), items, "append {k}");
                    // Tried again, the event goes through.
                    run_op(&mut session, op, &mut store).unwrap();
                }
                Err(e) => panic!("append {k}: {e:?}"),
            }
        }
        assert_eq!(held(session.context()), held(live.context()), "append {k}");
        let restored = restore_session(&engine, &store.items).unwrap();
        assert_eq!(held(restored.context()), held(live.context()), "append {k}");
        assert_eq!(restored.reply(), live.reply(), "append {k}");
    }
    // Compress notes refused are owed, not an error: fewer than the appends.
    std::println!("refused appends: {refused} errors of {} appends refused in turn", appends - 1);
    assert!(refused > appends / 2, "{refused} of {appends}");
}

#[test]
fn an_event_the_context_refuses_is_not_logged() {
    let engine = engine();
    let mut store = Items::default();
    let mut session = started_session(&engine, &mut store);
    let long: &'static str = "x".repeat(2000).leak();
    let event = Event::User { name: long, text: "" };
    let error = run_op(&mut session, &Op::Ev(event), &mut store).unwrap_err();
    assert!(matches!(
        error,
        SessionError::Record(RecordError::Step(StepError::Store(StoreError::TooMuchText { .. })))
    ));
    assert_eq!((store.items.len(), session.context().len()), (1, 0));
}

#[test]
fn an_empty_or_unfinished_restore_is_refused() {
    let engine = engine();
    assert!(matches!(
        restore_session(&engine, &[]),
        Err(LogError { kind: ItemError::MissingHeader, .. })
    ));
    let mut store = Items::default();
    let mut session = started_session(&engine, &mut store);
    run_op(&mut session, &Op::Ev(Event::User { name: "operator", text: "" }), &mut store).unwrap();
    let mut restored = Logged::new(&engine, AGENT);
    let mut restore = Restore::new(&mut restored);
    store.items.iter().try_for_each(|item| restore.check(item)).unwrap();
    let mut scratch = [0u8; 256];
    restore.apply(&store.items[0], &mut scratch).unwrap();
    assert!(matches!(restore.finish(), Err(LogError { index: 1, kind: ItemError::Unchecked })));
}

#[test]
fn a_session_s_split_step_logs_what_its_whole_step_and_the_journal_log() {
    let engine = engine();
    let temperatures = ["21.0", "21.0", "23.5", "23.5", "19.0"];
    let mut context = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&context);
    steps_at(&mut context, &mut journal, 0, &temperatures, &mut log);
    let (mut whole, mut split) = (Items::default(), Items::default());
    let (mut a, mut b) =
        (started_session(&engine, &mut whole), started_session(&engine, &mut split));
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    embassy_futures::block_on(async {
        for (i, t) in temperatures.iter().enumerate() {
            let minutes = i as i64;
            let input = step(minutes as u64, 1, 100);
            let mut live = Thermometer(t.to_string());
            let whole_hint = a
                .step(&input, now(minutes), &mut live, &mut hint, &mut buf, &mut whole)
                .await
                .unwrap()
                .hint
                .map(str::to_string);
            let decision =
                b.decide(&input, now(minutes), &live, &mut buf, &mut split).await.unwrap();
            let outcome = b
                .render_step(decision, &input, &mut live, &mut hint, &mut buf, &mut split)
                .await
                .unwrap();
            assert_eq!(outcome.hint.map(str::to_string), whole_hint);
        }
    });
    assert_eq!(whole.items, log);
    assert_eq!(split.items, log);
}

#[test]
fn the_header_s_settings_load_back_into_the_configuration_it_hashes() {
    let documents = [
        r#"{}"#,
        // Infinity as the loaders read it (a text; without `python-floats`
        // the exact-decimal path reads numbers only: a finite stand-in).
        match cfg!(feature = "python-floats") {
            true => {
                r#"{"injection_config": {"time_interval": "inf"}, "context_config": {"trigger_ratio": 0.30000000000000004}}"#
            }
            false => r#"{"injection_config": {"time_interval": 1e6}}"#,
        },
        // The firmware's configuration (firmware/session-config.json).
        r#"{"agent_name": "Sprout", "context_config": {"compression_tool_enabled": true},
            "injection_config": {"timezone": "Europe/Berlin", "time_interval": 0.01,
              "watch": {"temperature": {"change": "2", "above": "28", "hysteresis": "0.5"}}}}"#,
        // Every field away from its default.
        r#"{"agent_name": "a \"quoted\" name", "injection_config": {
              "inject_runtime_state": false, "timezone": "Asia/Kolkata",
              TIME_FORMAT "time_interval": 0.1234567890123,
              "context_buffer_ratio": 0.15, "tool_retries_limit": 5,
              "tool_retries_hint": "again: {tool_name} ({count})",
              "template": "<state>\n{runtime_state}\n</state>", "injection_source": "env",
              "task_tool_names": ["Plan", "Todo\u00e9"], "extra_fields": {"robot": "R2", "site": "north"},
              "emit_hint_event": false, "strict": true, "filtered_zone_falls_back_to_utc": true,
              "watch": {"t": {"below": "-3.25", "max_interval": 60}, "rh": {"change": 5, "hysteresis": "0.125", "min_interval": "0.000001", "max_interval": 1e9}}},
            "context_config": {"trigger_ratio": 0.7, "reserve_ratio": 0.05,
              "context_buffer_ratio": 0.25, "compression_tool_enabled": true}}"#,
    ];
    // A format of its own only where the build reads one.
    let format = match cfg!(feature = "custom-time-format") {
        true => r#""time_format": "%d.%m.%Y %H:%M","#,
        false => "",
    };
    for document in documents.map(|d| d.replace("TIME_FORMAT", format)) {
        let document = document.as_str();
        let mut written = ConfigBuf::<4096, 8, 8>::with_capacity();
        let loaded = written.load_session(document).unwrap();
        let engine = Engine::new(loaded.config).unwrap();
        let context = Context::new(&engine, loaded.agent_name);
        let (journal, log) = started(&context);
        // As written (a JSON map of serde_json would sort the watches).
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        let Entry::Header(header) = decode(&log[0], &WatchList::EMPTY, &mut blocks).unwrap().1
        else {
            panic!("not a header")
        };
        let settings = header.settings.unwrap();
        let mut read = ConfigBuf::<4096, 8, 8>::with_capacity();
        let back = read.load_session(settings).unwrap();
        assert_eq!(back.agent_name, loaded.agent_name);
        assert_eq!(
            Header::for_session(&back.config, back.agent_name, journal.header().capacity),
            journal.header(),
            "{settings}"
        );
        assert!(
            document != "{}"
                || settings
                    == r#"{"agent_name":"agent","injection_config":{},"context_config":{}}"#,
            "{settings}"
        );
    }
}

#[test]
fn a_refused_compaction_header_leaves_no_gap_and_a_compaction_restores() {
    let engine = engine();
    let ops = session();
    let mut store = Items::default();
    let mut session = started_session(&engine, &mut store);
    for op in &ops[..20] {
        run_op(&mut session, op, &mut store).unwrap();
    }
    let dead = session.dead_items();
    assert!(dead > 1, "{dead}");
    let mut buf = [0u8; 1024];
    store.refuse = Vec::from([store.appends]);
    let refused = embassy_futures::block_on(session.compaction_header(&mut buf, &mut store));
    assert!(matches!(refused, Err(SessionError::Append(_))));
    assert_eq!(session.dead_items(), dead);
    // The next item follows the last one in the log: no gap.
    run_op(&mut session, &ops[20], &mut store).unwrap();
    assert_eq!(
        held(restore_session(&engine, &store.items).unwrap().context()),
        held(session.context())
    );
    // A compaction: header appended, the dead items popped.
    let popped =
        embassy_futures::block_on(session.compaction_header(&mut buf, &mut store)).unwrap();
    store.items.drain(..popped as usize);
    session.popped(popped);
    for op in &ops[21..] {
        run_op(&mut session, op, &mut store).unwrap();
    }
    // The evicted count restarts from the compacted log (docs/reboot.md,
    // "Compaction"): the messages and the decision are compared.
    let messages = |context: &Context<'_>| {
        let held = held(context);
        let (store, decision) = held.split_once(", evicted_total").unwrap();
        format!("{store} {}", decision.split_once("Decision").unwrap().1)
    };
    let restored = restore_session(&engine, &store.items).unwrap();
    assert_eq!(messages(restored.context()), messages(session.context()));
    assert_eq!(restored.reply(), session.reply());
}

#[test]
fn a_split_step_around_a_refused_note_restores_and_too_many_blocks_are_refused() {
    let engine = engine();
    let ops = session();
    // Until the context is full (6 messages): the next user message evicts.
    let fill = |store: &mut Items| {
        let mut session = started_session(&engine, store);
        for op in &ops[..21] {
            run_op(&mut session, op, store).unwrap();
        }
        assert_eq!(session.context().len(), 6);
        session
    };
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let mut split = |session: &mut Logged<'_>, store: &mut Items, refuse_note: bool| {
        embassy_futures::block_on(async {
            let input = step(0, 1, 100);
            let decision = session.decide(&input, now(90), &(), &mut buf, store).await.unwrap();
            if refuse_note {
                // The user message's item goes, its `compress` note is refused.
                store.refuse = Vec::from([store.appends + 1]);
            }
            session
                .record(&Event::User { name: "operator", text: "" }, &mut buf, store)
                .await
                .unwrap();
            session
                .render_step(decision, &input, &mut (), &mut hint, &mut buf, store)
                .await
                .unwrap();
            // The next event: a note still owed would be appended now.
            session.record(&Event::Reply, &mut buf, store).await.unwrap();
        });
    };
    let (mut clean, mut refused) = (Items::default(), Items::default());
    let (mut a, mut b) = (fill(&mut clean), fill(&mut refused));
    split(&mut a, &mut clean, false);
    split(&mut b, &mut refused, true);
    assert_eq!(held(b.context()), held(a.context()));
    assert_eq!(
        held(restore_session(&engine, &refused.items).unwrap().context()),
        held(a.context())
    );

    // More blocks than a restore reads back: refused, nothing logged.
    let blocks = [Block::Other; MAX_EVENT_BLOCKS + 1];
    let items = clean.items.len();
    let error = run_op(&mut a, &Op::Ev(Event::Assistant(Box::leak(Box::new(blocks)))), &mut clean);
    assert!(matches!(error, Err(SessionError::Record(RecordError::TooManyBlocks { blocks: 17 }))));
    assert_eq!(clean.items.len(), items);
}

#[test]
fn a_configuration_too_long_or_repeating_a_key_is_logged_without_its_settings() {
    let template = std::format!("<s>{}{{runtime_state}}</s>", "x".repeat(1500));
    let mut config = Config::default();
    config.injection.template = Box::leak(template.into_boxed_str());
    let engine = Engine::new(config).unwrap();
    let context = Context::new(&engine, AGENT);
    let mut journal = Journal::new(&context);
    let mut buf = [0u8; 1024];
    let n = journal.start(&context, &mut buf).unwrap();
    let settings = |item: &[u8]| {
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        match decode(item, &WatchList::EMPTY, &mut blocks).unwrap().1 {
            Entry::Header(header) => header.settings.map(str::len),
            _ => panic!("not a header"),
        }
    };
    assert_eq!(settings(&buf[..n]), None);
    // A key given twice in code: the loaders keep one, so no settings.
    let mut config = Config::default();
    config.injection.extra_fields = crate::ExtraFields::Slice(&[("a", "1"), ("a", "2")]);
    let engine = Engine::new(config).unwrap();
    let context = Context::new(&engine, AGENT);
    let n = Journal::new(&context).start(&context, &mut buf).unwrap();
    assert_eq!(settings(&buf[..n]), None);
}

/// A watch with a floor and a heartbeat: the told instants survive a reset
/// at every item, so the restored session throttles and beats as the
/// uninterrupted one, step for step.
#[test]
fn told_instants_survive_a_restore_with_a_heartbeat_and_a_floor() {
    use crate::config::watch::{Interval, WatchFire::*};
    let watch = [(
        "temperature",
        Watch {
            change: Decimal::new(1, 0),
            min_interval: Interval::from_secs(120),
            max_interval: Interval::from_secs(240),
            ..Default::default()
        },
    )];
    let mut config = Config::default();
    config.injection.watch = WatchList::Slice(&watch);
    config.injection.time_interval = 24.0; // the watch alone fires
    let engine = Engine::new(config).unwrap();
    let mut temperatures = ["22 °C"; 13];
    (temperatures[0], temperatures[12]) = ("20 °C", "24 °C");
    // One user message and one step a minute: the hints do not pile up in
    // one message.
    let minute = |context: &mut Context<'_>,
                  journal: &mut Journal<6>,
                  i: usize,
                  log: &mut Vec<Vec<u8>>| {
        let mut buf = [0u8; 1024];
        let items =
            journal.record(context, &Event::User { name: "operator", text: "" }, &mut buf).unwrap();
        log.extend(items.iter(&buf).map(<[u8]>::to_vec));
        let reading = Thermometer(temperatures[i].to_string());
        let fired =
            context.decide_with_readings(&step(0, 0, 100), now(i as i64), &reading).watch.get(0);
        steps_at(context, journal, i as i64, &[temperatures[i]], log);
        fired
    };
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    let fires: Vec<_> =
        (0..temperatures.len()).map(|i| minute(&mut live, &mut journal, i, &mut log)).collect();
    // Told at 0; 22 at 1 is held back to 2; a steady 22 beats again
    // (the small context's compactions also make the time be told again,
    // which tells the field too and restarts both intervals).
    assert_eq!(fires[..3], [Value, Throttled, Value]);
    assert!(fires.contains(&Heartbeat), "{fires:?}");
    // A step item with a hint carries its instant in full.
    let watches = engine.config().config().injection.watch;
    let kinds: Vec<ItemKind> = log.iter().map(|i| ItemKind::of(i[0]).unwrap()).collect();
    assert!(log.iter().any(|item| {
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        matches!(
            decode(item, &watches, &mut blocks).unwrap().1,
            Entry::Step(StepRecord { clock: ClockChange::Set(at), decided: Some(_), .. }) if Some(at) == now(2)
        )
    }));
    for cut in 1..=log.len() {
        let (mut restored, mut restored_journal) = restore(&engine, &log[..cut]).unwrap();
        let done = kinds[..cut].iter().filter(|k| **k == ItemKind::Step).count();
        // A cut between a user message and its step: finish that step.
        let mut continued = log[..cut].to_vec();
        if kinds[..cut].iter().filter(|k| **k == ItemKind::User).count() > done {
            steps_at(
                &mut restored,
                &mut restored_journal,
                done as i64,
                &[temperatures[done]],
                &mut continued,
            );
        }
        let rest: Vec<_> = (done + usize::from(continued.len() > cut)..temperatures.len())
            .map(|i| minute(&mut restored, &mut restored_journal, i, &mut continued))
            .collect();
        assert_eq!(rest, fires[fires.len() - rest.len()..], "cut at item {cut}");
        assert_eq!(
            format!("{:?}", restored.store()),
            format!("{:?}", live.store()),
            "cut at item {cut}"
        );
    }
}

/// A step item carries the store's outbox mark when it changed since the
/// log said it (two bytes: the flag's second byte and the count of items
/// not yet delivered), and a restore reads the last one back.
#[test]
fn a_step_carries_the_outbox_mark_when_it_changed_and_a_restore_reads_it() {
    let engine = engine();
    let mut store = Items::default();
    let mut session = started_session(&engine, &mut store);
    let at = |minutes| Op::Step { minutes, cur_iter: 1, pending: 0, tokens: 100 };
    let undelivered = |item: &[u8]| {
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        match decode(item, &WatchList::EMPTY, &mut blocks) {
            Ok((_, Entry::Step(step))) => step.undelivered,
            other => panic!("not a step: {other:?}"),
        }
    };
    run_op(&mut session, &at(1), &mut store).unwrap();
    run_op(&mut session, &at(2), &mut store).unwrap();
    assert_eq!(undelivered(&store.items[2]), None, "no outbox, no mark");
    // Items 0 and 1 delivered: step 3 says 2 items (1 and 2) are not.
    store.mark = Some(1);
    run_op(&mut session, &at(3), &mut store).unwrap();
    assert_eq!(undelivered(&store.items[3]), Some(2));
    assert_eq!(store.items[3].len(), store.items[2].len() + 2);
    run_op(&mut session, &at(4), &mut store).unwrap();
    assert_eq!(undelivered(&store.items[4]), None, "the same mark is not said again");
    assert_eq!(session.journal().delivered(), Some(1));
    store.mark = Some(4);
    run_op(&mut session, &at(5), &mut store).unwrap();
    assert_eq!(undelivered(&store.items[5]), Some(1));
    assert_eq!(session.journal().delivered(), Some(4));
    let restored = restore_session(&engine, &store.items).unwrap();
    assert_eq!(restored.journal().delivered(), Some(4));
    // A log with no mark restores none.
    let plain = restore_session(&engine, &store.items[..3]).unwrap();
    assert_eq!(plain.journal().delivered(), None);
}
