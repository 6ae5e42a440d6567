//! The whole scripted session ([`agent::SCRIPT`]) on the host: the TMP105
//! behind embedded-hal-mock's I2C double, a clock stepped by the pacer,
//! and an [`Output`] that records the transcript.
//!
//! The mock is given exactly the transfers the session must make — one
//! configuration, then a pointer write and a 2-byte read per step (the
//! temperature is watched, so it is read before every decision, and not
//! again for the hint) — and `done()` checks that all were made: a read too
//! many, or a missing one, fails the test. The board's wall clock starts
//! at [`EPOCH`] and advances only when the pacer lets time pass, so every
//! time and uptime is exact.

use std::cell::Cell;

mod common;

use common::{configure, data, select};
use embassy_futures::block_on;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_sync::mutex::Mutex;
use embedded_hal::i2c::{ErrorKind, NoAcknowledgeSource};
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use envaware::Timestamp;
use envaware::WatchFire;
use envaware_firmware::agent::{self, Output, Pacer, Summary, TellingAge, Told, Woken, SCRIPT};
use envaware_firmware::clock;
use envaware_firmware::log::{RamFlash, SessionLog};
use envaware_firmware::tmp105::{self, Temperature, Tmp105};
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

/// The built-in fields of step `i`'s hint, given the steps where the
/// temperature watch alone makes one.
fn due(i: usize, watch_only: &[usize]) -> Option<&'static [&'static str]> {
    DUE[i].or(watch_only.contains(&i).then_some(&[]))
}

/// What the pacer was asked to do, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Paced {
    Wait(u32),
    Before(usize),
    /// The model's reply to step N's prompt (`None`: an environment step's).
    Model(Option<usize>),
    Finished,
}

/// Lets time pass on the board's millisecond counter, and records; wakes
/// the agent once with `wake` (a reading) in the idle time before its step,
/// [`WAKE_AFTER_MS`] into it (the watch's floor, as the board's sensor task
/// waits for it).
struct RecordingPacer<'a> {
    ms: &'a Cell<u64>,
    calls: Vec<Paced>,
    /// Unwind after this step, as a board resets after it.
    reset_after: Option<usize>,
    /// The counter kept across the reset, as the board keeps it.
    retained: &'a Cell<u64>,
    /// Wake the agent once, in the idle time before this step, with this reading.
    wake: Option<(usize, Temperature)>,
    /// The idle time already let pass for the step being woken.
    waited: u32,
}

/// How far into its idle time the pacer wakes the agent: the watch's
/// floor (`min_interval`), after which a change is told.
const WAKE_AFTER_MS: u32 = agent::MIN_INTERVAL_SECS as u32 * 1000;

impl Pacer for RecordingPacer<'_> {
    fn before_step(&mut self, index: usize) {
        self.calls.push(Paced::Before(index));
    }

    async fn idle(&mut self, index: usize, ms: u32) -> Option<Woken> {
        if let Some((_, temperature)) = self.wake.take_if(|(before, _)| *before == index) {
            let after = WAKE_AFTER_MS.min(ms);
            self.ms.set(self.ms.get() + u64::from(after));
            self.calls.push(Paced::Wait(after));
            self.waited = after;
            return Some(Woken { temperature });
        }
        let rest = ms - core::mem::take(&mut self.waited);
        self.ms.set(self.ms.get() + u64::from(rest));
        self.calls.push(Paced::Wait(rest));
        None
    }

    async fn model_reply<C: envaware::Conversation>(
        &mut self,
        index: Option<usize>,
        _request: &envaware::openai::ChatRequest<'_>,
        _context: &C,
        _body: &mut [u8],
    ) -> Option<Result<envaware_firmware::http::Exchanged, envaware_firmware::http::ExchangeError>>
    {
        self.calls.push(Paced::Model(index));
        None
    }

    fn finished(&mut self) {
        self.calls.push(Paced::Finished);
    }

    fn after_step(&mut self, index: usize) {
        if self.reset_after == Some(index) {
            self.retained.set(self.ms.get());
            std::panic::panic_any(Reset);
        }
    }

    fn resumed(&mut self) {
        self.ms.set(self.retained.get());
    }
}

/// The unwinding that stands for a reset in [`RecordingPacer`].
struct Reset;

/// One step of the recorded transcript.
#[derive(Debug, Default)]
struct StepRecord {
    note: String,
    /// An environment step: the reading that woke the agent.
    woken: Option<String>,
    hint: Option<String>,
    /// `Some(sensor_read)` when the step injected nothing.
    no_injection: Option<bool>,
    /// The temperature the watch compared, why it fired or did not, and
    /// the age of the telling it compared with.
    watch: Option<(String, WatchFire, TellingAge)>,
    /// The streamed lines, parsed.
    stream: Vec<Value>,
}

/// The transcript: the stream's lines before the first step, then each step.
#[derive(Debug, Default)]
struct Transcript {
    start: Vec<Value>,
    steps: Vec<StepRecord>,
    /// The first step's index (after a restore, not 0).
    first: Option<usize>,
}

impl Output for Transcript {
    fn step(&mut self, index: usize, note: &str) {
        let first = *self.first.get_or_insert(index);
        assert_eq!(
            index,
            first + self.steps.iter().filter(|s| s.woken.is_none()).count(),
            "steps out of order"
        );
        self.steps.push(StepRecord { note: note.to_string(), ..StepRecord::default() });
    }

    fn woken(&mut self, before: usize, temperature: &str) {
        assert_eq!(
            before,
            self.steps.iter().filter(|s| s.woken.is_none()).count(),
            "woken before the next step"
        );
        self.steps
            .push(StepRecord { woken: Some(temperature.to_string()), ..StepRecord::default() });
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

    fn watch(&mut self, temperature: &str, why: WatchFire, age: TellingAge) {
        let step = self.steps.last_mut().expect("a watch inside a step");
        assert!(step.watch.is_none(), "two watch decisions for one step");
        step.watch = Some((temperature.to_string(), why, age));
    }

    fn stream(&mut self, line: &str) {
        let value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
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
    // The session's log, on an erased 16 KiB "flash" (as the board's).
    session_on(boot_ms, transactions, &mut vec![0xFF; 16 * 1024])
}

/// [`session_from`] logging to `flash`, restoring what it holds first.
fn session_on(boot_ms: u32, transactions: &[Transaction], flash: &mut [u8]) -> Session {
    session_with(boot_ms, transactions, flash, None, None, &Cell::new(0))
}

/// [`session_on`], the board resetting after step `reset_after` (the run
/// unwinds there: what the log holds is what a reset leaves).
/// `retained` keeps the counter across it, and puts it back when the next
/// session resumes.
fn session_resetting(
    boot_ms: u32,
    transactions: &[Transaction],
    flash: &mut [u8],
    reset_after: Option<usize>,
    retained: &Cell<u64>,
) -> Session {
    session_with(boot_ms, transactions, flash, None, reset_after, retained)
}

/// [`session_on`], the environment waking the agent once with `wake`.
fn session_woken(
    boot_ms: u32,
    transactions: &[Transaction],
    flash: &mut [u8],
    wake: Option<(usize, Temperature)>,
) -> Session {
    session_with(boot_ms, transactions, flash, wake, None, &Cell::new(0))
}

/// [`session_on`] with the environment's wake and the board's reset.
fn session_with(
    boot_ms: u32,
    transactions: &[Transaction],
    flash: &mut [u8],
    wake: Option<(usize, Temperature)>,
    reset_after: Option<usize>,
    retained: &Cell<u64>,
) -> Session {
    let mut mock = Mock::new(transactions);
    let ms = Cell::new(0u64);
    let counter = || boot_ms.wrapping_add(ms.get() as u32);
    let mut clock = clock::wall_clock(|| u64::from(counter()));
    clock.set(Timestamp::from_unix_seconds(EPOCH));
    let mut pacer =
        RecordingPacer { ms: &ms, calls: Vec::new(), wake, reset_after, retained, waited: 0 };
    let mut transcript = Transcript::default();
    let log = Mutex::<NoopRawMutex, _>::new(SessionLog::new(RamFlash(flash)));
    let mut sensor = Tmp105::new(mock.clone(), tmp105::DEFAULT_ADDRESS);
    let summary = block_on(agent::run(
        &mut sensor,
        &mut clock,
        &mut pacer,
        &mut transcript,
        counter,
        &log,
        SCRIPT.len(),
    ));
    mock.done();
    Session { summary, transcript, paced: pacer.calls }
}

/// The sensor answering each step with the next of `readings`: set up
/// once, then a pointer write and a read each time.
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
            let (key, rest) = l
                .strip_prefix('<')
                .and_then(|r| r.split_once('>'))
                .unwrap_or_else(|| panic!("not a field: {l}"));
            let value = rest
                .strip_suffix(&format!("</{key}>"))
                .unwrap_or_else(|| panic!("not a field: {l}"));
            (key.to_string(), value.to_string())
        })
        .collect()
}

fn field(fields: &[(String, String)], key: &str) -> String {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {key} in {fields:?}"))
}

/// The board's milliseconds at step `i`: the waits of steps `0..=i`.
fn ms_at(i: usize) -> u32 {
    SCRIPT[..=i].iter().map(|s| s.wait_ms).sum()
}

/// Checks that the steps run in order, each injecting exactly the fields
/// due (and a hint of the live fields alone at the `watch_only` steps),
/// with `temperature` the `i`-th expected one for the `i`-th injection and
/// `uptime` the board's time; returns each hint's fields.
fn check_schedule(
    s: &Session,
    temperatures: &[&str],
    watch_only: &[usize],
) -> Vec<Option<Vec<(String, String)>>> {
    let steps: Vec<&StepRecord> = s.transcript.steps.iter().filter(|s| s.woken.is_none()).collect();
    assert_eq!(steps.len(), SCRIPT.len());
    let mut expected_paced = Vec::new();
    for (i, step) in SCRIPT.iter().enumerate() {
        expected_paced.extend([Paced::Wait(step.wait_ms), Paced::Before(i), Paced::Model(Some(i))]);
    }
    expected_paced.push(Paced::Finished);
    assert_eq!(s.paced, expected_paced);
    let mut temperatures = temperatures.iter();
    let mut all = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(step.note, SCRIPT[i].note);
        match (due(i, watch_only), &step.hint) {
            (None, None) => {
                assert_eq!(
                    step.no_injection,
                    Some(false),
                    "step {i}: no hint, and the uptime must not be read"
                );
                all.push(None);
            }
            (Some(due), Some(hint)) => {
                let f = fields(hint);
                let keys: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
                let mut expected = due.to_vec();
                expected.extend(["temperature", "uptime"]);
                assert_eq!(keys, expected, "step {i}:\n{hint}");
                assert_eq!(
                    Some(&field(&f, "temperature").as_str()),
                    temperatures.next(),
                    "step {i}"
                );
                let ms = ms_at(i);
                assert_eq!(
                    field(&f, "uptime"),
                    format!("{}.{:03} s", ms / 1000, ms % 1000),
                    "step {i}"
                );
                all.push(Some(f));
            }
            (due, hint) => panic!("step {i}: expected {due:?}, got {hint:?}"),
        }
    }
    assert_eq!(temperatures.next(), None, "fewer injections than readings");
    all
}

/// Why each step's temperature watch fired, or not, and the telling's age.
fn why(s: &Session) -> Vec<(WatchFire, TellingAge)> {
    s.transcript
        .steps
        .iter()
        .map(|st| {
            st.watch.as_ref().map_or((WatchFire::Quiet, TellingAge::NeverTold), |w| (w.1, w.2))
        })
        .collect()
}

/// The steps whose temperature watch fired.
fn watch_fired(s: &Session) -> Vec<usize> {
    s.transcript
        .steps
        .iter()
        .enumerate()
        .filter(|(_, st)| st.watch.as_ref().is_some_and(|w| w.1.fired()))
        .map(|(i, _)| i)
        .collect()
}

/// One reading per step: 21.5 °C, 30 °C from step 5, -4.25 °C at step 7,
/// 12.0625 °C from step 8.
const READINGS: [[u8; 2]; 10] = [
    [0x15, 0x80],
    [0x15, 0x80],
    [0x15, 0x80],
    [0x15, 0x80],
    [0x15, 0x80],
    [0x1E, 0x00],
    [0x1E, 0x00],
    [0xFB, 0xC0],
    [0x0C, 0x10],
    [0x0C, 0x10],
];

#[test]
fn the_script_injects_each_field_at_its_step_and_reads_the_sensor_at_every_step() {
    let s = session(&answering(&READINGS));
    let shown =
        ["21.5 °C", "21.5 °C", "30.0 °C", "30.0 °C", "-4.25 °C", "12.0625 °C", "12.0625 °C"];
    let hints = check_schedule(&s, &shown, &[9]);
    // Nothing told at step 0; 8.5 °C up at 5; 34.25 down at 7; 16.3125 up
    // at 8; at 9, 12 s after step 8 told it, the heartbeat (10 s) tells the
    // steady 12.0625 °C again.
    // 7 and 8 come 3 and 2 s after a telling: the floor (6 s) holds their
    // changes back (their hints tell the readings anyway); 6 and 9 come 40
    // and 12 s after one: the heartbeat (10 s) fires, the reading steady.
    assert_eq!(watch_fired(&s), [0, 5, 6, 9]);
    use TellingAge::{Micros, NeverTold};
    use WatchFire::{Heartbeat, Quiet, Throttled, Value};
    assert_eq!(
        why(&s),
        [
            (Value, NeverTold),
            (Quiet, Micros(1_000_000)),
            (Quiet, Micros(2_000_000)),
            (Quiet, Micros(3_500_000)),
            (Quiet, Micros(5_000_000)),
            (Value, Micros(6_500_000)),
            (Heartbeat, Micros(40_000_000)),
            (Throttled, Micros(3_000_000)),
            (Throttled, Micros(2_000_000)),
            (Heartbeat, Micros(12_000_000)),
        ]
    );
    // The compression at step 8 evicts 7 messages, and no decision reads
    // more than 2.
    assert_eq!(
        s.summary,
        Summary {
            steps: 10,
            hints: 7,
            reads: 10,
            failures: 0,
            evicted: 7,
            max_read: 1,
            compactions: 0,
            // The header and 34 items: the operator's 4 messages and the
            // agent's thought, 10 steps, 10 replies, 8 tool results (the
            // replies that called tools) and the compression.
            next_item: 35
        }
    );

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
    let from_zero = session(&answering(&READINGS));
    let across = session_from(u32::MAX - 19_999, &answering(&READINGS));
    assert!(ms_at(5) < 20_000 && ms_at(6) > 20_000);
    assert_eq!(across.summary, from_zero.summary);
    let steps = from_zero.transcript.steps.iter().zip(&across.transcript.steps);
    for (i, (zero, wrapped)) in steps.enumerate() {
        // Everything but the uptime, which is the counter's own value: the
        // hint, and the stream's lines up to the clock and the plan.
        let until_live = zero.stream.len() - 2;
        let stream = |s: &StepRecord| {
            without_uptime(&serde_json::to_string(&s.stream[..until_live]).unwrap())
        };
        assert_eq!(stream(wrapped), stream(zero), "step {i}");
        assert_eq!(
            wrapped.hint.as_deref().map(without_uptime),
            zero.hint.as_deref().map(without_uptime),
            "step {i}"
        );
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
    // No TMP105 on the bus: each step tries to set it up again, and fails.
    let transactions: Vec<Transaction> =
        SCRIPT.iter().map(|_| configure().with_error(ErrorKind::ArbitrationLoss)).collect();
    let s = session(&transactions);
    check_schedule(&s, &[agent::UNAVAILABLE; 6], &[]);
    // An unavailable reading never fires the watch.
    assert_eq!(watch_fired(&s), [0usize; 0]);
    assert_eq!(
        s.summary,
        Summary {
            steps: 10,
            hints: 6,
            reads: 0,
            failures: 10,
            evicted: 7,
            max_read: 1,
            compactions: 0,
            // The header and 34 items: the operator's 4 messages and the
            // agent's thought, 10 steps, 10 replies, 8 tool results (the
            // replies that called tools) and the compression.
            next_item: 35
        }
    );
}

#[test]
fn a_sensor_that_fails_now_and_then_is_unavailable_for_that_hint_only() {
    let ok = |r: [u8; 2]| [select(), data(r)];
    let mut t = vec![configure()];
    // Step 0: set up and read 25.5 °C.
    t.extend(ok([0x19, 0x80]));
    // Step 1: the pointer write is not acknowledged.
    t.push(select().with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address)));
    // Steps 2 to 4: 25.5 °C again; step 1's hint told "unavailable", so
    // nothing was told: step 2's watch fires, alone.
    for _ in 2..=4 {
        t.extend(ok([0x19, 0x80]));
    }
    // Step 5: a stuck data line (FF FF): implausible, so set up again next time.
    t.extend([select(), data([0xFF, 0xFF])]);
    // Step 6: set up again, and read 30 °C.
    t.push(configure());
    t.extend(ok([0x1E, 0x00]));
    // Step 7: the bus hangs (the board's I2C times out: `Other`).
    t.extend([select(), data([0, 0]).with_error(ErrorKind::Other)]);
    // Steps 8 and 9: a read error keeps the sensor's mode: no set-up, just a read.
    t.extend(ok([0xFB, 0xC0]));
    t.extend(ok([0xFB, 0xC0]));
    let s = session(&t);
    let u = agent::UNAVAILABLE;
    check_schedule(&s, &["25.5 °C", u, u, "30.0 °C", u, "-4.25 °C", "-4.25 °C"], &[9]);
    // 25.5 (nothing told), 25.5 again (step 1 told "unavailable"); at step
    // 6, step 5 told "unavailable"; at 8, step 7 did.
    // Steps 2 to 4 come 2 to 5 s after step 1 told "unavailable": the
    // floor holds the 25.5 °C back; at 8, 2 s after step 7 told
    // "unavailable", too; at 9, 12 s after, the heartbeat tells it.
    assert_eq!(watch_fired(&s), [0, 6, 9]);
    assert_eq!(
        why(&s).iter().map(|w| w.0).collect::<Vec<_>>(),
        [
            WatchFire::Value,
            WatchFire::Quiet,
            WatchFire::Throttled,
            WatchFire::Throttled,
            WatchFire::Throttled,
            WatchFire::Quiet,
            WatchFire::Value,
            WatchFire::Quiet,
            WatchFire::Throttled,
            WatchFire::Heartbeat,
        ]
    );
    assert_eq!(
        s.summary,
        Summary {
            steps: 10,
            hints: 7,
            reads: 7,
            failures: 3,
            evicted: 7,
            max_read: 1,
            compactions: 0,
            // The header and 34 items: the operator's 4 messages and the
            // agent's thought, 10 steps, 10 replies, 8 tool results (the
            // replies that called tools) and the compression.
            next_item: 35
        }
    );
}

/// The time the stream's `set_clock` carries at step `i`, in UTC.
fn clock_at(i: usize) -> String {
    let ms = ms_at(i);
    assert!(ms < 3_600_000, "the script fits in the first hour");
    let fraction =
        if ms.is_multiple_of(1000) { String::new() } else { format!(".{:06}", (ms % 1000) * 1000) };
    format!("2026-01-01T00:{:02}:{:02}{fraction}Z", ms / 60_000, ms / 1000 % 60)
}

#[test]
fn the_stream_writes_each_step_as_agentscope_json_lines() {
    let s = session(&answering(&READINGS));
    let t = &s.transcript;
    assert_eq!(
        t.start,
        [
            json!({"config": {"agent_name": "Sprout", "context_config": {"compression_tool_enabled": true}, "context_size": 4096}})
        ]
    );
    let mut last_live = None;
    for (i, step) in t.steps.iter().enumerate() {
        let lines = &step.stream;
        // {"context": []}, one {"message": Msg} per message, then the clock,
        // the plan, the configuration with its watch, the live values and
        // the step.
        assert!(lines.len() >= 7, "step {i}: {lines:?}");
        assert_eq!(lines[0], json!({"context": []}), "step {i}");
        let messages = &lines[1..lines.len() - 5];
        let [clock, tasks, config, live, step_line] = &lines[lines.len() - 5..] else {
            unreachable!()
        };
        assert!(
            !messages.is_empty() && messages.len() <= 16,
            "step {i}: {} messages",
            messages.len()
        );
        for m in messages {
            let msg = &m["message"];
            assert!(
                msg["id"].as_str().is_some_and(|id| id.starts_with("Sprout-")),
                "step {i}: {m}"
            );
            assert!(matches!(msg["role"].as_str(), Some("user" | "assistant")), "step {i}: {m}");
            assert!(msg["content"].is_array(), "step {i}: {m}");
        }
        assert_eq!(*clock, json!({"set_clock": clock_at(i)}), "step {i}");
        let plan = SCRIPT[i].tasks;
        let states: Vec<&str> = std::iter::repeat_n("in_progress", plan.in_progress as usize)
            .chain(std::iter::repeat_n("pending", plan.pending as usize))
            .collect();
        assert_eq!(*tasks, json!({"tasks": states}), "step {i}");
        assert_eq!(
            *step_line,
            json!({"step": {"cur_iter": SCRIPT[i].cur_iter, "tokens": SCRIPT[i].input_tokens}}),
            "step {i}"
        );
        let injection = &config["config"]["injection_config"];
        assert_eq!(injection["timezone"], "Europe/Berlin");
        assert_eq!(injection["time_interval"], 0.01);
        assert_eq!(
            injection["watch"],
            json!({"temperature": {
                "change": "2", "above": "28", "hysteresis": "0.5",
                "min_interval": "6", "max_interval": "10"
            }})
        );
        // The live values the hint carried; a step without a hint read only
        // the temperature, and repeats the last uptime.
        let read = live["read"].clone();
        let temperature = step.watch.as_ref().map(|w| w.0.clone()).unwrap_or_default();
        assert_eq!(read["temperature"], json!(temperature), "step {i}");
        if let Some(hint) = &step.hint {
            let f = fields(hint);
            assert_eq!(
                read,
                json!({"temperature": field(&f, "temperature"), "uptime": field(&f, "uptime")}),
                "step {i}"
            );
            last_live = Some(read["uptime"].clone());
        } else {
            assert_eq!(Some(read["uptime"].clone()), last_live, "step {i}");
        }
    }
    // The compression at step 8 leaves one message in the context.
    assert_eq!(t.steps[8].stream.len(), 1 + 1 + 5);
    // Each hint is in the context every later step streams, as the hint
    // block AgentScope's `append_context` adds, oldest first, until the
    // compression at step 8 keeps only the message holding step 7's.
    let hint_blocks = |j: usize| -> Vec<String> {
        let blocks =
            t.steps[j].stream.iter().filter_map(|l| l["message"]["content"].as_array()).flatten();
        blocks
            .filter(|b| b["type"] == "hint")
            .map(|b| b["hint"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    for j in 0..t.steps.len() {
        let kept_from = if j >= 8 { 7 } else { 0 };
        let expected: Vec<String> =
            (kept_from..j).filter_map(|i| t.steps[i].hint.clone()).collect();
        assert_eq!(hint_blocks(j), expected, "step {j}");
    }
}

/// issue 21: a whole session's log restores the whole session (no step
/// left to run); a log with a byte flipped is refused and the session
/// starts again from an empty context, giving the same hints.
#[test]
fn a_logged_session_restores_and_a_damaged_log_starts_empty() {
    let readings = answering(&[[0x19, 0x80]; 10]);
    let mut flash = vec![0xFF; 16 * 1024];
    let first = session_on(0, &readings, &mut flash);
    assert_eq!(first.summary.steps, 10);
    let whole = flash.clone();
    let again = session_on(0, &[], &mut flash);
    assert_eq!(again.summary.steps, 0, "all ten steps were restored");
    assert!(again.transcript.steps.is_empty());
    let mut damaged = whole.clone();
    // A byte of the header's configuration hash (the header item starts
    // with its kind, its number 0 in four bytes, and the version 3).
    let at = damaged.windows(6).position(|w| w == [1, 0, 0, 0, 0, 3]).expect("the header");
    damaged[at + 7] ^= 0x01;
    let fresh = session_on(0, &readings, &mut damaged);
    assert_eq!(fresh.summary.steps, 10, "a refused log starts the session again");
    let hints =
        |s: &Session| s.transcript.steps.iter().map(|step| step.hint.clone()).collect::<Vec<_>>();
    assert_eq!(hints(&fresh), hints(&first));
    assert!(hints(&first).iter().flatten().count() >= 6);
}

/// The log compacts when its region fills: the same hints as with room to
/// spare, and a reset after a compaction restores the session, whose later
/// hints are an uninterrupted run's.
#[test]
fn the_log_compacts_when_its_region_fills_and_restores_after_it() {
    let readings: Vec<[u8; 2]> = (0..10u8).map(|i| [0x14 + 3 * (i % 4), 0x40]).collect();
    let roomy = session_on(0, &answering(&readings), &mut vec![0xFF; 16 * 1024]);
    assert_eq!(roomy.summary.compactions, 0);
    let hints =
        |s: &Session| s.transcript.steps.iter().map(|step| step.hint.clone()).collect::<Vec<_>>();
    let mut small = vec![0xFF; PAGES * 1024];
    let compacted = session_on(0, &answering(&readings), &mut small);
    assert!(compacted.summary.compactions >= 1, "{:?}", compacted.summary);
    assert_eq!(hints(&compacted), hints(&roomy));
    // A reset late in the session, after the log was compacted.
    let after = 8;
    let mut flash = vec![0xFF; PAGES * 1024];
    let mock = answering(&readings[..=after]);
    let retained = Cell::new(0);
    let first = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        session_resetting(0, &mock, &mut flash, Some(after), &retained)
    }));
    assert!(first.is_err_and(|e| e.is::<Reset>()), "the run resets after step {after}");
    let resumed =
        session_resetting(0, &answering(&readings[after + 1..]), &mut flash, None, &retained);
    assert_eq!(resumed.summary.steps, 10 - after - 1);
    assert_eq!(hints(&resumed)[..], hints(&roomy)[after + 1..]);
}

/// A region (in 1 KiB pages) in which the session's log compacts: its
/// items (about 2 KB for the ten steps) fit in 4 pages with the two kept
/// free, so 3 compact twice.
const PAGES: usize = 3;

/// issue 21: a log the device cannot restore — another configuration's, or
/// one with an item cut short in its middle (a torn write: its CRC fails, the
/// queue skips it) — is refused with a warning, and the session starts again
/// from an empty context, giving the hints of a fresh run.
#[test]
fn a_foreign_or_truncated_log_starts_the_session_empty() {
    let readings = answering(&[[0x19, 0x80]; 10]);
    let hints =
        |s: &Session| s.transcript.steps.iter().map(|step| step.hint.clone()).collect::<Vec<_>>();
    let fresh = session_on(0, &readings, &mut vec![0xFF; 16 * 1024]);

    // Another configuration: a log another engine's journal started.
    let mut foreign = vec![0xFF; 16 * 1024];
    {
        let engine = envaware::Engine::new(envaware::Config::default()).unwrap();
        let mut context = agent::Context::new(&engine, agent::AGENT);
        let mut journal = envaware::journal::Journal::new(&context);
        let mut log = SessionLog::new(RamFlash(&mut foreign));
        let mut buf = [0u8; 512];
        let n = journal.start(&context, &mut buf).unwrap();
        assert!(block_on(log.append(&buf[..n])).is_ok());
        let items = journal
            .record(
                &mut context,
                &envaware::journal::Event::User { name: "operator", text: "" },
                &mut buf,
            )
            .unwrap();
        assert!(items.iter(&buf).all(|item| block_on(log.append(item)).is_ok()));
    }
    assert!(restored_steps(&mut foreign.clone()).is_err());
    let refused = session_on(0, &readings, &mut foreign);
    assert_eq!(refused.summary.steps, 10, "a foreign log is not restored");
    assert_eq!(hints(&refused), hints(&fresh));
    // It was erased, and the new session's log is this device's.
    assert_eq!(restored_steps(&mut foreign), Ok(10));

    // An item cut short in the log's middle.
    let mut whole = vec![0xFF; 16 * 1024];
    session_on(0, &readings, &mut whole);
    // The first item after the header long enough to cut in its middle.
    let item = items_of(&mut whole.clone()).into_iter().skip(1).find(|i| i.len() > 8).unwrap();
    let at = whole.windows(item.len()).position(|w| w == item).expect("the item");
    whole[at + 3..at + 8].fill(0xFF);
    assert!(matches!(
        restored_steps(&mut whole.clone()),
        Err(envaware_firmware::log::RestoreError::Item(_))
    ));
    let truncated = session_on(0, &readings, &mut whole);
    assert_eq!(truncated.summary.steps, 10, "a log with a torn item is not restored");
    assert_eq!(hints(&truncated), hints(&fresh));
    assert_eq!(restored_steps(&mut whole), Ok(10));
}

/// The items of the log in `flash`, as the queue reads them.
fn items_of(flash: &mut [u8]) -> Vec<Vec<u8>> {
    let mut buf = [0u8; envaware_firmware::log::MAX_ITEM];
    let mut items = Vec::new();
    let read = block_on(SessionLog::new(RamFlash(flash)).read_items(&mut buf, |item| {
        items.push(item.to_vec());
        Ok::<(), ()>(())
    }));
    assert!(read.is_ok());
    items
}

/// The steps the log in `flash` restores, as the board reads it at boot.
fn restored_steps(flash: &mut [u8]) -> Result<usize, envaware_firmware::log::RestoreError> {
    let engine = envaware::Engine::new(agent::config()).unwrap();
    let mut context = agent::Context::new(&engine, agent::AGENT);
    let mut journal = envaware::journal::Journal::new(&context);
    let (mut buf, mut scratch) = ([0u8; 1024], [0u8; 1024]);
    block_on(SessionLog::new(RamFlash(flash)).restore(
        &mut journal,
        &mut context,
        &mut buf,
        &mut scratch,
    ))
}

/// issue 22: the environment wakes the agent before step 6 with 33.0 °C,
/// 6 s into the idle time (once the watch's floor has passed since step 5
/// told the temperature).
/// The agent starts a reply with no user message and takes an environment
/// step whose hint tells the reading; the scripted steps' hints are those
/// of the session nobody woke, and the sensor is not read for it.
#[test]
fn the_environment_wakes_the_agent_for_a_step_that_tells_the_reading() {
    let plain = session(&answering(&READINGS));
    let woke = session_woken(
        0,
        &answering(&READINGS),
        &mut vec![0xFF; 16 * 1024],
        Some((6, Temperature::from_register([0x21, 0x00]))),
    );
    let steps = &woke.transcript.steps;
    assert_eq!(steps.len(), SCRIPT.len() + 1);
    let env = &steps[6];
    assert_eq!(env.woken.as_deref(), Some("33.0 °C"));
    let f = fields(env.hint.as_deref().expect("the environment step's hint"));
    // Step 5 told the tool-error; the environment step does not: step 5's
    // reply called `Water`, which worked, so the three failed `OpenVent`
    // calls are no longer the newest.
    let step_5 = fields(steps[5].hint.as_deref().expect("step 5's hint"));
    assert_eq!(step_5[0], ("tool-error".to_string(), TOOL_ERROR.to_string()));
    assert_eq!(
        f,
        [
            ("temperature".to_string(), "33.0 °C".to_string()),
            ("uptime".to_string(), {
                let ms = ms_at(5) + WAKE_AFTER_MS;
                format!("{}.{:03} s", ms / 1000, ms % 1000)
            })
        ]
    );
    assert_eq!(
        env.watch,
        Some(("33.0 °C".to_string(), WatchFire::Value, TellingAge::Micros(6_000_000)))
    );
    // Streamed: a new reply, what woke it, then the step as any other.
    assert_eq!(
        env.stream[..3],
        [
            json!({"reply": {}}),
            json!({"woken": {"temperature": "33.0 °C"}}),
            json!({"context": []})
        ]
    );
    assert_eq!(
        env.stream.last(),
        Some(&json!({"step": {"cur_iter": 0, "tokens": SCRIPT[5].input_tokens}}))
    );
    // The scripted steps: the same hints; the model awaited after each
    // step, the environment's included.
    let scripted = |s: &Session| {
        s.transcript
            .steps
            .iter()
            .filter(|s| s.woken.is_none())
            .map(|s| s.hint.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(scripted(&woke), scripted(&plain));
    assert!(
        woke.paced
            .windows(3)
            .any(|w| w == [Paced::Model(Some(5)), Paced::Wait(WAKE_AFTER_MS), Paced::Model(None)]),
        "{:?}",
        woke.paced
    );
    // One reading more (the one that woke it, not read again), one hint
    // more, and the compression at step 8 evicts the environment's message too.
    assert_eq!(
        woke.summary,
        Summary {
            hints: plain.summary.hints + 1,
            reads: 11,
            evicted: 8,
            // The environment's `reply`, its step, the model's reply.
            next_item: plain.summary.next_item + 3,
            ..plain.summary
        }
    );
}

const TOOL_ERROR: &str = "The last 3 calls to 'OpenVent' with the same arguments all failed. Stop retrying the same call as-is, check the error message and try a different approach.";

/// Whether a reading wakes the agent is the core's watch rule against what
/// the context told and how long ago: only a value change past the floor
/// (`min_interval`, 6 s) wakes it; a heartbeat waits for the next step;
/// with no watch, nothing wakes it.
#[test]
fn a_reading_wakes_the_agent_when_the_core_says_its_watch_fires_by_value() {
    let watches = agent::config().injection.watch;
    let told = |t: Option<&str>, age_s: Option<i64>| {
        let mut told = Told::default();
        told.values[0] = t.and_then(envaware::Decimal::parse);
        told.ages[0] = age_s.map(|s| s * 1_000_000);
        told
    };
    let wakes = |t, age, reading| agent::wakes(&watches, &told(t, age), reading);
    assert!(wakes(None, None, "21.5 °C"), "nothing told");
    assert!(!wakes(Some("29.5"), Some(7), "31.0 °C"), "1.5 from 29.5, above 28 both");
    assert!(wakes(Some("29.5"), Some(7), "33.0 °C"), "3.5 from 29.5");
    assert!(wakes(Some("27.5"), Some(7), "28.0625 °C"), "crossing 28");
    assert!(!wakes(None, None, agent::UNAVAILABLE), "unavailable never fires");
    // The floor: 5 s after the telling the change is held back; at 6 s it wakes.
    let fire = |t, age, reading| agent::watch_fire(&watches, &told(t, age), reading);
    assert_eq!(fire(Some("29.5"), Some(5), "33.0 °C"), WatchFire::Throttled);
    assert!(!wakes(Some("29.5"), Some(5), "33.0 °C"));
    assert_eq!(fire(Some("29.5"), Some(6), "33.0 °C"), WatchFire::Value);
    // The heartbeat fires at 10 s, or with no known age, but wakes nobody.
    assert_eq!(fire(Some("29.5"), Some(10), "29.5 °C"), WatchFire::Heartbeat);
    assert_eq!(fire(Some("29.5"), None, "29.5 °C"), WatchFire::Heartbeat);
    assert!(!wakes(Some("29.5"), Some(10), "29.5 °C"));
    assert!(!wakes(Some("29.5"), None, "29.5 °C"));
    assert_eq!(fire(Some("29.5"), Some(9), "29.5 °C"), WatchFire::Quiet);
    // The board counts the ages on from when it was told.
    assert_eq!(told(Some("29.5"), Some(5)).later(1_000_000), told(Some("29.5"), Some(6)));
    assert!(
        !agent::wakes(&envaware::WatchList::EMPTY, &told(None, None), "33.0 °C"),
        "no watch: nothing wakes the agent"
    );
}

/// The model server's script for the demo (`firmware/model-script.jsonl`)
/// is the board's own replies ([`agent::SCRIPT`]'s, and
/// [`agent::ENVIRONMENT_REPLY`] for the environment steps the demo's
/// temperatures make before steps 4 and 6), in the order the board asks:
/// a run with the model server and a run without one log the same session.
#[test]
fn the_model_server_s_script_is_the_board_s_own_replies_in_request_order() {
    let as_json = |reply: &agent::Reply| {
        let mut line = json!({"content": reply.text});
        if !reply.calls.is_empty() {
            line["tool_calls"] = reply
                .calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect();
        }
        line
    };
    let mut expected = Vec::new();
    for (i, step) in SCRIPT.iter().enumerate() {
        if i == 4 || i == 6 {
            expected.push(as_json(&agent::ENVIRONMENT_REPLY));
        }
        expected.push(as_json(&step.reply));
    }
    let file = include_str!("../model-script.jsonl");
    let lines: Vec<Value> =
        file.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines, expected);
}

/// Each tool the script's replies call has an outcome the next step
/// decides on: the vent's motor is jammed (three failed calls make the
/// tool-error at step 5), `CompressContext` compresses, an unknown tool
/// fails naming itself.
#[test]
fn the_device_s_tools_give_the_outcomes_the_script_decides_on() {
    use agent::tools;
    use envaware::ToolResultState::{Error, Success};
    for step in SCRIPT {
        for call in step.reply.calls {
            let outcome = tools::run(call.name);
            let failing = call.name == "OpenVent";
            assert_eq!(outcome.state, if failing { Error } else { Success }, "{}", call.name);
            assert_eq!(outcome.compress.is_some(), call.name == "CompressContext", "{}", call.name);
        }
    }
    assert_eq!(tools::run("Fly").state, Error);
    assert_eq!(tools::run("Fly").output, "no such tool");
}
