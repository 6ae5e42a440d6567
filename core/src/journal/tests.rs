extern crate std;

use super::*;
use crate::config::load::ConfigBuf;
use crate::config::watch::WatchList;
use crate::config::Config;
use crate::config::ContextConfig;
use crate::conversation::{HintText, Role, ToolResultState};
use crate::engine::Engine;
use crate::json::{self, JsonError, JsonStr};
use crate::wire::Rfc3339;
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
        Op::Ev(Event::User { name: "operator \"ops\"" }),
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
        ops.push(Op::Ev(Event::User { name: "operator" }));
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

#[test]
fn a_restored_context_is_the_context_before_the_reset_at_every_item() {
    let engine = engine();
    let ops = session();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &ops, &mut log);
    assert!(live.store().evicted_total() > 0, "the session evicts");
    // Every prefix of the log: the context the same events build live.
    for cut in 1..=log.len() {
        let (mut restored, journal) = restore(&engine, &log[..cut]).unwrap();
        assert_eq!(journal.restored_events() as usize, cut - 1);
        let mut again = Context::new(&engine, AGENT);
        let (mut j, _) = started(&again);
        for item in &log[1..cut] {
            let mut scratch = [0u8; 2048];
            let (_, key, value) = read_item(item).unwrap();
            let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
            let said = j.said;
            let event =
                read_event(key, value, &said, &mut Scratch { rest: &mut scratch }, &mut blocks)
                    .unwrap();
            let mut buf = [0u8; 2048];
            j.record(&mut again, &event, &mut buf).unwrap();
        }
        assert_eq!(state(&mut restored), state(&mut again), "after {cut} items");
    }
    let (mut restored, _) = restore(&engine, &log).unwrap();
    assert_eq!(state(&mut restored), state(&mut live));
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
                let (decision, items) =
                    journal.decide(&mut split, &step, now(*minutes), &(), &mut buf).unwrap();
                log.extend(items.iter(&buf).map(<[u8]>::to_vec));
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
    // Items that do not fit: nothing counted, the next step logs as before.
    let step = step(0, 3, 100);
    assert!(journal.decide(&mut split, &step, now(90), &(), &mut [0u8; 4]).is_err());
    let (decision, items) = journal.decide(&mut split, &step, now(90), &(), &mut buf).unwrap();
    let first = core::str::from_utf8(items.iter(&buf).next().unwrap()).unwrap().to_string();
    assert!(first.starts_with(&format!("{{\"#\":{},", log.len())), "{first}");
    assert!(journal
        .render_step(&mut split, decision, &step, &mut (), &mut hint, &mut [0u8; 4])
        .is_err());
    assert_eq!(journal.items() as usize, log.len() + items.len());
}

#[test]
fn items_are_the_replay_trace_format() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session()[..9], &mut log);
    let text: Vec<&str> = log.iter().map(|i| core::str::from_utf8(i).unwrap()).collect();
    let header =
        format!("{{\"#\":0,\"log\":{{\"version\":2,\"config\":\"{:016x}\",\"capacity\":{:?},\"live\":0,\"agent\":\"rover\",\"settings\":{{\"agent_name\":\"rover\",\"injection_config\":{{}},\"context_config\":{{\"compression_tool_enabled\":true}}}}}}}}", journal.header().config, journal.header().capacity).replace(", ", ",");
    assert_eq!(text[0], header);
    assert_eq!(text[1], r##"{"#":1,"user":{"name":"operator \"ops\"","content":""}}"##);
    assert_eq!(text[2], r##"{"#":2,"config":{"agent_name":"rover","context_size":8192}}"##);
    assert_eq!(text[3], r##"{"#":3,"tasks":["pending","pending"]}"##);
    assert_eq!(text[4], r##"{"#":4,"set_clock":"2026-07-22T02:30:00Z"}"##);
    // `cur_iter` is left out where the replay's default (0 after a user
    // message, the last step's plus one) is right.
    assert!(
        text[5].starts_with(r##"{"#":5,"step":{"tokens":900,"hint":"<system-reminder>"##),
        "{}",
        text[5]
    );
    assert_eq!(
        text[6],
        r##"{"#":6,"tool_call":{"id":"c1","name":"Drive","input":"{\"metres\": 2,\n \"note\": \"é😀\\\\\"}"}}"##
    );
    assert_eq!(text[7], r##"{"#":7,"tool_result":{"id":"c1","name":"Drive","state":"error"}}"##);
    // A minute later: the clock advances, configuration and tasks are
    // as they were.
    assert_eq!(text[12], r##"{"#":12,"advance":60}"##);
    assert_eq!(text[13], r##"{"#":13,"step":{"tokens":7000,"hint":null}}"##);
    assert_eq!(text.len(), 14);
}

#[test]
fn the_clock_is_read_back_as_the_wire_writes_it() {
    for micros in [
        0,
        1,
        250_000,
        1_784_687_400_000_000,
        1_784_687_400_123_456,
        -62_135_596_800_000_000,
        253_402_300_799_999_999,
    ] {
        let text = Rfc3339(Timestamp(micros)).to_string();
        assert_eq!(read_rfc3339(&text), Some(Timestamp(micros)), "{text}");
    }
    for bad in [
        "",
        "Z",
        "2026-07-22T02:30:00",
        "2026-07-22 02:30:00Z",
        "2026-07-22T02:30:00.25Z",
        "2026-02-30T02:30:00Z",
        "+026-07-22T02:30:00Z",
        "12026-07-22T02:30:00Z",
        "2026-7-22T02:30:00Z",
        "2026-07-22T2:30:00Z",
        "2026-07-22T24:00:00Z",
    ] {
        assert_eq!(read_rfc3339(bad), None, "{bad}");
    }
    // A restore follows the clock through `set_clock` and `advance`.
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session(), &mut log);
    let (_, restored) = restore(&engine, &log).unwrap();
    assert!(restored.clock().is_some());
    assert_eq!(restored.clock(), journal.clock());
    // A step whose clock is unknown writes `set_clock: null`, which a
    // restore reads back as unknown.
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let (_, items) =
        journal.step(&mut live, &step(0, 1, 100), None, &mut (), &mut hint, &mut buf).unwrap();
    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    assert!(log.iter().any(|i| i.ends_with(b"\"set_clock\":null}")));
    let (_, restored) = restore(&engine, &log).unwrap();
    assert_eq!(restored.clock(), None);
    // An `advance` with no clock before it: the time is unknown.
    let mut said = Said::default();
    let value = json::parse("60", 4).unwrap();
    let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
    let event = read_event(
        JsonStr::from_validated("advance"),
        value,
        &said,
        &mut Scratch { rest: &mut [] },
        &mut blocks,
    )
    .unwrap();
    assert!(matches!(event, Event::SetClock(None)));
    said.clock = Some(Some(Timestamp(5)));
    let value = json::parse("\"7us\"", 4).unwrap();
    let event = read_event(
        JsonStr::from_validated("advance"),
        value,
        &said,
        &mut Scratch { rest: &mut [] },
        &mut blocks,
    )
    .unwrap();
    assert!(matches!(event, Event::SetClock(Some(Timestamp(12)))));
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

#[test]
fn live_values_are_logged_where_they_changed_and_survive_a_restore() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    live.user("operator").unwrap();
    steps_at(&mut live, &mut journal, 0, &["21.5 °C", "21.5 °C", "22 \"C\"", "22 \"C\""], &mut log);
    let text: Vec<String> = log.iter().map(|i| String::from_utf8(i.clone()).unwrap()).collect();
    let reads: Vec<&String> = text.iter().filter(|t| t.contains("\"read\":")).collect();
    assert_eq!(reads.len(), 2, "{text:#?}");
    assert!(reads[0].ends_with(r#""read":{"temperature":"21.5 °C"}}"#), "{}", reads[0]);
    assert!(reads[1].ends_with(r#""read":{"temperature":"22 \"C\""}}"#), "{}", reads[1]);
    // Each `read` is the item just before its step's.
    for (i, _) in text.iter().enumerate().filter(|(_, t)| t.contains("\"read\":")) {
        assert!(text[i + 1].contains("\"step\":"), "{}", text[i + 1]);
    }
    // A restore knows what the log said last: the same temperature is
    // not written again, a new one is, as without the reset.
    let (mut restored, mut restored_journal) = restore(&engine, &log).unwrap();
    let mut continued = log.clone();
    steps_at(&mut restored, &mut restored_journal, 4, &["22 \"C\"", "23 °C"], &mut continued);
    steps_at(&mut live, &mut journal, 4, &["22 \"C\"", "23 °C"], &mut log);
    assert_eq!(continued, log);
    assert_eq!(log.iter().filter(|i| i.windows(7).any(|w| w == b"\"read\":")).count(), 3);
    // A `read` that is not an object of texts is refused, naming it.
    let index = text.iter().position(|t| t.contains("\"read\":")).unwrap();
    for bad in ["5", r#"{"temperature":5}"#] {
        let mut damaged = log.clone();
        damaged[index] = format!("{{\"#\":{index},\"read\":{bad}}}").into_bytes();
        let e = error_of(&damaged);
        assert_eq!((e.index as usize, e.kind), (index, ItemError::Field("read")), "{bad}");
    }
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
fn a_read_item_holds_every_field_and_null_reads_back_as_unavailable() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    live.user("operator").unwrap();
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let mut fields = TwoFields("21.5 °C", "7.818 s");
    let (_, items) = journal
        .step(&mut live, &step(0, 1, 100), now(0), &mut fields, &mut hint, &mut buf)
        .unwrap();
    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    let read = log
        .iter()
        .map(|i| String::from_utf8(i.clone()).unwrap())
        .find(|t| t.contains("\"read\":"))
        .unwrap();
    assert!(read.ends_with(r#""read":{"temperature":"21.5 °C","uptime":"7.818 s"}}"#), "{read}");
    let readings = Readings::of(&fields);
    assert_eq!(format!("{readings:?}"), format!("Readings {{ hash: {}, .. }}", readings.hash));
    // `null` is read back as `unavailable`: the same hash.
    let null = json::parse(r#"{"temperature":null}"#, 4).unwrap();
    let text = json::parse(r#"{"temperature":"unavailable"}"#, 4).unwrap();
    assert_eq!(Readings::read(null).unwrap().hash, Readings::read(text).unwrap().hash);
    assert_ne!(
        Readings::read(null).unwrap().hash,
        Readings::read(json::parse(r#"{"temperature":"21.5 °C"}"#, 4).unwrap()).unwrap().hash
    );
}

fn error_of(log: &[Vec<u8>]) -> LogError {
    restore(&engine(), log).expect_err("the log is refused")
}

#[test]
fn a_damaged_log_is_a_typed_error_naming_the_item() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session(), &mut log);
    // A flipped byte: in the JSON's structure, in a field name, in a state.
    let mut flipped = log.clone();
    flipped[6][0] ^= 0x01;
    let e = error_of(&flipped);
    assert_eq!(
        (e.index, e.kind),
        (6, ItemError::Json(JsonError { kind: json::JsonErrorKind::ExpectedValue, offset: 0 }))
    );
    assert_eq!(e.to_string(), "log item 6: not JSON: expecting value at byte 0");
    let mut flipped = log.clone();
    let at = flipped[7].windows(5).position(|w| w == b"error").unwrap();
    flipped[7][at] = b'f';
    assert_eq!(error_of(&flipped), LogError { index: 7, kind: ItemError::Field("state") });
    let mut flipped = log.clone();
    flipped[8][2] = 0xff;
    assert_eq!(error_of(&flipped), LogError { index: 8, kind: ItemError::NotUtf8 });
    // A truncated item.
    let mut truncated = log.clone();
    let len = truncated[9].len();
    truncated[9].truncate(len - 3);
    let e = error_of(&truncated);
    assert_eq!(e.index, 9);
    assert!(matches!(e.kind, ItemError::Json(_)), "{e}");
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
    // Another event, another shape.
    let mut odd = log.clone();
    odd[3] = br##"{"#":3,"shout":1}"##.to_vec();
    assert_eq!(error_of(&odd), LogError { index: 3, kind: ItemError::UnknownEvent });
    odd[3] = br##"{"#":3,"tasks":[],"step":{}}"##.to_vec();
    assert_eq!(error_of(&odd), LogError { index: 3, kind: ItemError::NotAnItem });
    assert_eq!(
        error_of(&odd).to_string(),
        "log item 3: not an object of an item number \"#\" and one event"
    );
}

/// issue 33: the one reader of items ([`ItemReader`], which
/// [`Journal::check`] runs) refuses a line break in an item, a number past
/// `u32`, and a gap, also across a wrap of a number out of `u32`.
#[test]
fn an_item_with_a_line_break_or_a_number_past_u32_is_refused_by_the_one_reader() {
    let engine = engine();
    let mut live = Context::new(&engine, AGENT);
    let (mut journal, mut log) = started(&live);
    run_live(&mut live, &mut journal, &session(), &mut log);
    // A line break is JSON whitespace, but a log dumped one item a line
    // would read it as two lines.
    for (at, line_break) in [(b"\"#\":3,", b'\n'), (b"\"#\":3,", b'\r')] {
        let mut split = log.clone();
        let offset = split[3].windows(at.len()).position(|w| w == at).unwrap() + at.len();
        split[3].insert(offset, line_break);
        assert_eq!(error_of(&split), LogError { index: 3, kind: ItemError::LineBreak { offset } });
        assert_eq!(
            error_of(&split).to_string(),
            format!("log item 3: a line break at byte {offset}: an item is one line")
        );
    }
    // Numbers the journal never writes: past u32, negative, not integers.
    for number in ["4294967296", "18446744073709551615", "18446744073709551616", "-1", "3.0", "3e0"]
    {
        let mut odd = log.clone();
        odd[3] = format!("{{\"#\":{number},\"reply\":null}}").into_bytes();
        assert_eq!(error_of(&odd), LogError { index: 3, kind: ItemError::Number { offset: 5 } });
    }
    let mut odd = log.clone();
    odd[3] = br##"{"#":4294967296,"reply":null}"##.to_vec();
    assert_eq!(
        error_of(&odd).to_string(),
        "log item 3: its number \"#\" at byte 5 is not an integer from 0 to 4294967295"
    );
    // The sim's old reader took u64 numbers: u64::MAX then 0 was no gap.
    let mut reader = ItemReader::new();
    let e = reader.read(br##"{"#":18446744073709551615,"reply":null}"##).unwrap_err();
    assert_eq!(e, LogError { index: 0, kind: ItemError::Number { offset: 5 } });
    assert_eq!(reader.items(), 0);
    // The journal numbers its items modulo 2^32 (`wrapping_add`): 0
    // follows u32::MAX, as it writes them; anything else is a gap.
    let mut reader = ItemReader::new();
    let head = reader.read(br##"{"#":4294967295,"reply":null}"##).unwrap();
    assert_eq!((head.number, head.event), (u32::MAX, "reply"));
    let e = reader.read(br##"{"#":1,"reply":null}"##).unwrap_err();
    assert_eq!(e, LogError { index: 1, kind: ItemError::Gap { expected: 0, found: 1 } });
    assert_eq!(reader.read(br##"{"#":0,"reply":null}"##).unwrap().number, 0);
    assert_eq!(reader.items(), 2);
    // The reader and the check pass agree on every item of a real log.
    let mut reader = ItemReader::new();
    let mut check = Journal::new(&Context::new(&engine, AGENT));
    for item in &log {
        assert_eq!(reader.read(item).map(drop), check.check(item));
    }
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
        foreign[0] =
            format!("{{\"#\":0,\"log\":{{\"version\":2,\"config\":\"{found:016x}\",\"capacity\":[1,2,3],\"live\":0,\"agent\":\"rover\"}}}}").into_bytes();
        let e = error_of(&foreign);
        assert_eq!(e, LogError { index: 0, kind: ItemError::Config { found, expected } });
        assert_eq!(e.to_string(), format!("log item 0: written for configuration {found:016x}, this context is {expected:016x}"));
    }
    let mut newer = log.clone();
    newer[0] = format!("{{\"#\":0,\"log\":{{\"version\":3,\"config\":\"{expected:016x}\",\"live\":0,\"agent\":\"rover\"}}}}").into_bytes();
    assert_eq!(error_of(&newer), LogError { index: 0, kind: ItemError::Version { found: 3 } });
    assert_eq!(
        error_of(&newer).to_string(),
        "log item 0: log format version 3, this build reads 2"
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
    let e =
        journal.record(&mut live, &Event::User { name: "operator" }, &mut [0u8; 8]).unwrap_err();
    assert_eq!(e, RecordError::BufferFull(BufferFull { capacity: 8 }));
    let long = "x".repeat(2000);
    let e = journal.record(&mut live, &Event::User { name: &long }, &mut [0u8; 4096]).unwrap_err();
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
    let header =
        Event::Log { header: journal.header(), live: 0, agent: AGENT, steps: 0, settings: None };
    assert_eq!(
        journal.record(&mut live, &header, &mut [0u8; 128]).unwrap_err(),
        RecordError::NotRecordable
    );
    assert_eq!((state(&mut live), journal.items()), before);
    // The next item follows the last one written.
    let mut buf = [0u8; 128];
    let items = journal.record(&mut live, &Event::Reply, &mut buf).unwrap();
    assert_eq!(items.iter(&buf).collect::<Vec<_>>(), [br##"{"#":1,"reply":null}"##]);
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
                    // Only the inputs a step logs before its own item stay.
                    assert!(store.items[items..].iter().all(|item| !item.starts_with(b"{\"#\"")
                        || !std::str::from_utf8(item).unwrap().contains("\"step\"")));
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
    let event = Event::User { name: long };
    let error = run_op(&mut session, &Op::Ev(event), &mut store).unwrap_err();
    assert!(matches!(
        error,
        SessionError::Record(RecordError::Step(StepError::Store(StoreError::TooMuchText { .. })))
    ));
    assert_eq!((store.items.len(), session.context().len()), (1, 0));
    // Nor a header.
    let header = Event::Log {
        header: session.journal().header(),
        live: 0,
        agent: AGENT,
        steps: 0,
        settings: None,
    };
    assert!(matches!(
        run_op(&mut session, &Op::Ev(header), &mut store),
        Err(SessionError::Record(RecordError::NotRecordable))
    ));
    assert_eq!(store.items.len(), 1);
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
    run_op(&mut session, &Op::Ev(Event::User { name: "operator" }), &mut store).unwrap();
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
        let item = core::str::from_utf8(&log[0]).unwrap();
        let at = item.find(r#""settings":"#).unwrap();
        let settings = &item[at + r#""settings":"#.len()..item.len() - 2];
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
            session.record(&Event::User { name: "operator" }, &mut buf, store).await.unwrap();
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
    let item = core::str::from_utf8(&buf[..n]).unwrap();
    assert!(!item.contains("settings"), "{item}");
    // A key given twice in code: the loaders keep one, so no settings.
    let mut config = Config::default();
    config.injection.extra_fields = crate::ExtraFields::Slice(&[("a", "1"), ("a", "2")]);
    let engine = Engine::new(config).unwrap();
    let context = Context::new(&engine, AGENT);
    let n = Journal::new(&context).start(&context, &mut buf).unwrap();
    assert!(!core::str::from_utf8(&buf[..n]).unwrap().contains("settings"));
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
        let items = journal.record(context, &Event::User { name: "operator" }, &mut buf).unwrap();
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
    // A step item with a hint carries its instant.
    let text: Vec<String> = log.iter().map(|i| String::from_utf8(i.clone()).unwrap()).collect();
    assert!(
        text.iter()
            .any(|t| t.contains("\"step\":") && t.ends_with(r#","at":"2026-07-22T02:32:00Z"}}"#)),
        "{text:#?}"
    );
    for cut in 1..=log.len() {
        let (mut restored, mut restored_journal) = restore(&engine, &log[..cut]).unwrap();
        let done = text[..cut].iter().filter(|t| t.contains("\"step\":")).count();
        // A cut between a user message and its step: finish that step.
        let mut continued = log[..cut].to_vec();
        if text[..cut].iter().filter(|t| t.contains("\"user\":")).count() > done {
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
