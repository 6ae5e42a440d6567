//! The whole scripted session ([`agent::SCRIPT`]) on the host: the TMP105
//! behind embedded-hal-mock's I2C double, a clock stepped by the pacer,
//! and an [`Output`] that records the transcript.
//!
//! The mock is given exactly the transfers the session must make — one
//! configuration, then a pointer write and a 2-byte read per injection —
//! and `done()` checks that all were made: a sensor read at a step without
//! a hint, or a missing one, fails the test. The board's wall clock starts
//! at [`EPOCH`] and advances only when the pacer lets time pass, so every
//! time and uptime is exact.

use std::cell::Cell;

mod common;

use common::{configure, data, select};
use embedded_hal::i2c::{ErrorKind, NoAcknowledgeSource};
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use envaware::Timestamp;
use envaware_firmware::agent::{self, Output, Pacer, Summary, SCRIPT};
use envaware_firmware::clock;
use serde_json::{json, Value};

/// The board's wall time at boot: 2026-01-01T00:00:00Z, 01:00:00 in Berlin
/// (as the QEMU tests, `tests/tests/firmware.rs`).
const EPOCH: i64 = 1_767_225_600;

/// The built-in fields due at each step, as the table in `agent.rs`'s docs
/// says; `None`: no injection.
const DUE: [Option<&[&str]>; 10] = [
    Some(&["current-time", "timezone"]),
    Some(&["tasks"]),
    None,
    None,
    None,
    Some(&["tool-error"]),
    Some(&["current-time", "timezone"]),
    Some(&["context-length"]),
    Some(&["current-time", "timezone", "tasks"]),
    None,
];

/// The steps that inject, in order.
fn injecting() -> Vec<usize> {
    (0..DUE.len()).filter(|&i| DUE[i].is_some()).collect()
}

/// What the pacer was asked to do, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Paced {
    Wait(u32),
    Before(usize),
    Finished,
}

/// Lets time pass on the board's millisecond counter, and records.
struct RecordingPacer<'a> {
    ms: &'a Cell<u64>,
    calls: Vec<Paced>,
}

impl Pacer for RecordingPacer<'_> {
    fn before_step(&mut self, index: usize) {
        self.calls.push(Paced::Before(index));
    }

    fn pass_time(&mut self, ms: u32) {
        self.ms.set(self.ms.get() + u64::from(ms));
        self.calls.push(Paced::Wait(ms));
    }

    fn finished(&mut self) {
        self.calls.push(Paced::Finished);
    }
}

/// One step of the recorded transcript.
#[derive(Debug, Default)]
struct StepRecord {
    note: String,
    hint: Option<String>,
    /// `Some(sensor_read)` when the step injected nothing.
    no_injection: Option<bool>,
    /// The streamed lines, parsed.
    stream: Vec<Value>,
}

/// The transcript: the stream's lines before the first step, then each step.
#[derive(Debug, Default)]
struct Transcript {
    start: Vec<Value>,
    steps: Vec<StepRecord>,
}

impl Output for Transcript {
    fn step(&mut self, index: usize, note: &str) {
        assert_eq!(index, self.steps.len(), "steps out of order");
        self.steps.push(StepRecord { note: note.to_string(), ..StepRecord::default() });
    }

    fn hint(&mut self, hint: &str) {
        let step = self.steps.last_mut().expect("a hint inside a step");
        assert!(step.hint.is_none() && step.no_injection.is_none(), "two outcomes for one step");
        step.hint = Some(hint.to_string());
    }

    fn no_injection(&mut self, sensor_read: bool) {
        let step = self.steps.last_mut().expect("an outcome inside a step");
        assert!(step.hint.is_none() && step.no_injection.is_none(), "two outcomes for one step");
        step.no_injection = Some(sensor_read);
    }

    fn stream(&mut self, line: &str) {
        let value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        match self.steps.last_mut() {
            Some(step) => step.stream.push(value),
            None => self.start.push(value),
        }
    }
}

/// What one session produced.
struct Session {
    summary: Summary,
    transcript: Transcript,
    paced: Vec<Paced>,
}

/// Runs the script with the sensor's bus expecting exactly `transactions`.
fn session(transactions: &[Transaction]) -> Session {
    session_from(0, transactions)
}

/// [`session`] with the board's millisecond counter (a `u32`, as SysTick's)
/// reading `boot_ms` at boot.
fn session_from(boot_ms: u32, transactions: &[Transaction]) -> Session {
    let mut mock = Mock::new(transactions);
    let ms = Cell::new(0u64);
    let counter = || boot_ms.wrapping_add(ms.get() as u32);
    let mut clock = clock::wall_clock(|| u64::from(counter()));
    clock.set(Timestamp::from_unix_seconds(EPOCH));
    let mut pacer = RecordingPacer { ms: &ms, calls: Vec::new() };
    let mut transcript = Transcript::default();
    let summary = agent::run(mock.clone(), &mut clock, &mut pacer, &mut transcript, counter);
    mock.done();
    Session { summary, transcript, paced: pacer.calls }
}

/// The sensor answering each injection with the next of `readings`: set
/// up once, then a pointer write and a read each time.
fn answering(readings: &[[u8; 2]]) -> Vec<Transaction> {
    let mut t = vec![configure()];
    for &r in readings {
        t.extend([select(), data(r)]);
    }
    t
}

/// The hint's `(key, value)` fields, in order.
fn fields(hint: &str) -> Vec<(String, String)> {
    let mut lines = hint.lines();
    assert!(lines.next().is_some_and(|l| l.starts_with("<system-reminder>")), "{hint}");
    assert_eq!(hint.lines().last(), Some("</system-reminder>"), "{hint}");
    lines
        .filter(|l| *l != "</system-reminder>")
        .map(|l| {
            let (key, rest) = l.strip_prefix('<').and_then(|r| r.split_once('>')).unwrap_or_else(|| panic!("not a field: {l}"));
            let value = rest.strip_suffix(&format!("</{key}>")).unwrap_or_else(|| panic!("not a field: {l}"));
            (key.to_string(), value.to_string())
        })
        .collect()
}

fn field(fields: &[(String, String)], key: &str) -> String {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("no {key} in {fields:?}"))
}

/// The board's milliseconds at step `i`: the waits of steps `0..=i`.
fn ms_at(i: usize) -> u32 {
    SCRIPT[..=i].iter().map(|s| s.wait_ms).sum()
}

/// Checks that the steps run in order, each injecting exactly the fields
/// due, with `temperature` the `i`-th expected one for the `i`-th
/// injection and `uptime` the board's time; returns each hint's fields.
fn check_schedule(s: &Session, temperatures: &[&str]) -> Vec<Option<Vec<(String, String)>>> {
    let steps = &s.transcript.steps;
    assert_eq!(steps.len(), SCRIPT.len());
    let mut expected_paced = Vec::new();
    for (i, step) in SCRIPT.iter().enumerate() {
        expected_paced.extend([Paced::Wait(step.wait_ms), Paced::Before(i)]);
    }
    expected_paced.push(Paced::Finished);
    assert_eq!(s.paced, expected_paced);
    let mut temperatures = temperatures.iter();
    let mut all = Vec::new();
    for (i, (step, due)) in steps.iter().zip(DUE).enumerate() {
        assert_eq!(step.note, SCRIPT[i].note);
        match (due, &step.hint) {
            (None, None) => {
                assert_eq!(step.no_injection, Some(false), "step {i}: no hint, and the sensor must not be read");
                all.push(None);
            }
            (Some(due), Some(hint)) => {
                let f = fields(hint);
                let keys: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
                let mut expected = due.to_vec();
                expected.extend(["temperature", "uptime"]);
                assert_eq!(keys, expected, "step {i}:\n{hint}");
                assert_eq!(Some(&field(&f, "temperature").as_str()), temperatures.next(), "step {i}");
                let ms = ms_at(i);
                assert_eq!(field(&f, "uptime"), format!("{}.{:03} s", ms / 1000, ms % 1000), "step {i}");
                all.push(Some(f));
            }
            (due, hint) => panic!("step {i}: expected {due:?}, got {hint:?}"),
        }
    }
    assert_eq!(temperatures.next(), None, "fewer injections than readings");
    all
}

#[test]
fn the_script_injects_each_field_at_its_step_and_reads_the_sensor_only_then() {
    // 21.5, 30, -4.25, 12.0625, 0 and 33.5 °C: one per injection.
    let readings = [[0x15, 0x80], [0x1E, 0x00], [0xFB, 0xC0], [0x0C, 0x10], [0x00, 0x00], [0x21, 0x80]];
    let s = session(&answering(&readings));
    let shown = ["21.5 °C", "30.0 °C", "-4.25 °C", "12.0625 °C", "0.0 °C", "33.5 °C"];
    let hints = check_schedule(&s, &shown);
    // The QEMU run logs the same numbers (`session done: …`): the compression
    // at step 8 evicts 7 messages, and no decision reads more than 2.
    assert_eq!(s.summary, Summary { steps: 10, hints: 6, reads: 6, failures: 0, evicted: 7, max_read: 2 });

    let f = |i: usize| hints[i].as_deref().unwrap_or_else(|| panic!("step {i} injected nothing"));
    // The time is told at 01:00:00 (Berlin), again once more than 36 s have
    // passed (47.5 s, shown to the second), and after the compression.
    assert_eq!(field(f(0), "current-time"), "2026-01-01T01:00:00");
    assert_eq!(field(f(6), "current-time"), "2026-01-01T01:00:47");
    assert_eq!(field(f(8), "current-time"), "2026-01-01T01:00:52");
    for i in [0, 6, 8] {
        assert_eq!(field(f(i), "timezone"), "Europe/Berlin");
    }
    assert_eq!(field(f(1), "tasks"), "You have 0 in-progress tasks and 3 pending tasks. Use `TaskList` to view them if you don't know.");
    assert_eq!(
        field(f(5), "tool-error"),
        "The last 3 calls to 'OpenVent' with the same arguments all failed. Stop retrying the same call as-is, check the error message and try a different approach."
    );
    assert_eq!(
        field(f(7), "context-length"),
        "Your current context contains 2600 tokens. When reaching 3276 tokens, your context will be compressed."
    );
    assert_eq!(field(f(8), "tasks"), "You have 1 in-progress tasks and 1 pending tasks. Use `TaskList` to view them if you don't know.");
}

#[test]
fn a_session_across_the_millisecond_counter_s_wrap_tells_the_same_times() {
    // Booted 20 s before the counter wraps (after 49.7 days of uptime): the
    // wrap falls between steps 5 and 6, and every time told and streamed
    // is the one of a board booted at 0.
    let readings = [[0x15, 0x80], [0x1E, 0x00], [0xFB, 0xC0], [0x0C, 0x10], [0x00, 0x00], [0x21, 0x80]];
    let from_zero = session(&answering(&readings));
    let across = session_from(u32::MAX - 19_999, &answering(&readings));
    assert!(ms_at(5) < 20_000 && ms_at(6) > 20_000);
    assert_eq!(across.summary, from_zero.summary);
    let steps = from_zero.transcript.steps.iter().zip(&across.transcript.steps);
    for (i, (zero, wrapped)) in steps.enumerate() {
        // Everything but the uptime, which is the counter's own value: the
        // hint, and the stream's lines up to the clock and the plan.
        let until_live = zero.stream.len() - 2;
        let stream = |s: &StepRecord| without_uptime(&serde_json::to_string(&s.stream[..until_live]).unwrap());
        assert_eq!(stream(wrapped), stream(zero), "step {i}");
        assert_eq!(wrapped.hint.as_deref().map(without_uptime), zero.hint.as_deref().map(without_uptime), "step {i}");
    }
}

/// `text` with every `<uptime>…</uptime>` field emptied.
fn without_uptime(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some((before, after)) = rest.split_once("<uptime>") {
        out.push_str(before);
        out.push_str("<uptime>");
        rest = after.split_once("</uptime>").map_or("", |(_, tail)| tail);
        out.push_str("</uptime>");
    }
    out + rest
}

#[test]
fn a_sensor_that_never_answers_gives_unavailable_in_every_hint_and_the_run_goes_on() {
    // No TMP105 on the bus: each injection tries to set it up again, and fails.
    let transactions: Vec<Transaction> = injecting().iter().map(|_| configure().with_error(ErrorKind::ArbitrationLoss)).collect();
    let s = session(&transactions);
    check_schedule(&s, &[agent::UNAVAILABLE; 6]);
    assert_eq!(s.summary, Summary { steps: 10, hints: 6, reads: 0, failures: 6, evicted: 7, max_read: 2 });
}

#[test]
fn a_sensor_that_fails_now_and_then_is_unavailable_for_that_hint_only() {
    let s = session(&[
        // Step 0: set up and read.
        configure(),
        select(),
        data([0x19, 0x80]),
        // Step 1: the pointer write is not acknowledged.
        select().with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)),
        // Step 5: a stuck data line (FF FF): implausible, so set up again next time.
        select(),
        data([0xFF, 0xFF]),
        // Step 6: set up again, and read.
        configure(),
        select(),
        data([0x1E, 0x00]),
        // Step 7: the bus hangs (the board's I2C times out: `Other`).
        select(),
        data([0, 0]).with_error(ErrorKind::Other),
        // Step 8: a read error keeps the sensor's mode: no set-up, just a read.
        select(),
        data([0xFB, 0xC0]),
    ]);
    let u = agent::UNAVAILABLE;
    check_schedule(&s, &["25.5 °C", u, u, "30.0 °C", u, "-4.25 °C"]);
    assert_eq!(s.summary, Summary { steps: 10, hints: 6, reads: 3, failures: 3, evicted: 7, max_read: 2 });
}

/// The time the stream's `set_clock` carries at step `i`, in UTC.
fn clock_at(i: usize) -> String {
    let ms = ms_at(i);
    assert!(ms < 60_000, "the script fits in the first minute");
    let fraction = if ms.is_multiple_of(1000) { String::new() } else { format!(".{:06}", (ms % 1000) * 1000) };
    format!("2026-01-01T00:00:{:02}{fraction}Z", ms / 1000)
}

#[test]
fn the_stream_writes_each_step_as_agentscope_json_lines() {
    let readings = [[0x15, 0x80], [0x1E, 0x00], [0xFB, 0xC0], [0x0C, 0x10], [0x00, 0x00], [0x21, 0x80]];
    let s = session(&answering(&readings));
    let t = &s.transcript;
    assert_eq!(
        t.start,
        [json!({"config": {"agent_name": "Sprout", "context_config": {"compression_tool_enabled": true}, "context_size": 4096}})]
    );
    let mut last_live = None;
    for (i, step) in t.steps.iter().enumerate() {
        let lines = &step.stream;
        // {"context": []}, one {"message": Msg} per message, then the clock,
        // the plan, the live values and the step.
        assert!(lines.len() >= 6, "step {i}: {lines:?}");
        assert_eq!(lines[0], json!({"context": []}), "step {i}");
        let messages = &lines[1..lines.len() - 4];
        let [clock, tasks, live, step_line] = &lines[lines.len() - 4..] else { unreachable!() };
        assert!(!messages.is_empty() && messages.len() <= 16, "step {i}: {} messages", messages.len());
        for m in messages {
            let msg = &m["message"];
            assert!(msg["id"].as_str().is_some_and(|id| id.starts_with("Sprout-")), "step {i}: {m}");
            assert!(matches!(msg["role"].as_str(), Some("user" | "assistant")), "step {i}: {m}");
            assert!(msg["content"].is_array(), "step {i}: {m}");
        }
        assert_eq!(*clock, json!({"set_clock": clock_at(i)}), "step {i}");
        let plan = SCRIPT[i].tasks;
        let states: Vec<&str> = std::iter::repeat_n("in_progress", plan.in_progress as usize)
            .chain(std::iter::repeat_n("pending", plan.pending as usize))
            .collect();
        assert_eq!(*tasks, json!({"tasks": states}), "step {i}");
        assert_eq!(*step_line, json!({"step": {"cur_iter": SCRIPT[i].cur_iter, "tokens": SCRIPT[i].input_tokens}}), "step {i}");
        // The live values the hint carried; a step without a hint read
        // nothing, so it repeats the last ones.
        let injection = &live["config"]["injection_config"];
        assert_eq!(injection["timezone"], "Europe/Berlin");
        assert_eq!(injection["time_interval"], 0.01);
        let extra = injection["extra_fields"].clone();
        if let Some(hint) = &step.hint {
            let f = fields(hint);
            assert_eq!(extra, json!({"temperature": field(&f, "temperature"), "uptime": field(&f, "uptime")}), "step {i}");
            last_live = Some(extra);
        } else {
            assert_eq!(Some(extra), last_live, "step {i}");
        }
    }
    // The compression at step 8 leaves one message in the context.
    assert_eq!(t.steps[8].stream.len(), 1 + 1 + 4);
    // Each hint is in the context every later step streams, as the hint
    // block AgentScope's `append_context` adds, oldest first, until the
    // compression at step 8 keeps only the message holding step 7's.
    let hint_blocks = |j: usize| -> Vec<String> {
        let blocks = t.steps[j].stream.iter().filter_map(|l| l["message"]["content"].as_array()).flatten();
        blocks.filter(|b| b["type"] == "hint").map(|b| b["hint"].as_str().unwrap_or_default().to_string()).collect()
    };
    for j in 0..t.steps.len() {
        let kept_from = if j >= 8 { 7 } else { 0 };
        let expected: Vec<String> = (kept_from..j).filter_map(|i| t.steps[i].hint.clone()).collect();
        assert_eq!(hint_blocks(j), expected, "step {j}");
    }
}
