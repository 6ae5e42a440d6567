//! `envaware-sim fuzz --config FILE`: the user's own configuration, held
//! fixed, over random sessions.
//!
//! Each session is written as a replay trace (the configuration, a start
//! time, then user messages, tool calls that fail or succeed, plan changes,
//! clock moves around `time_interval`, token counts around the reminder
//! threshold, compressions and steps; with a watch, readings of the
//! watched fields and clock moves onto its `min_interval`/`max_interval`)
//! and run through [`replay`], so what
//! is checked is exactly what `envaware-sim replay` does with the trace.
//! With a hint capacity, a session where some hint does not fit is shrunk
//! by proptest to a minimal trace that replays to the same `HintTooLong`.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config as PtConfig, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

use crate::record::StepRecord;
use crate::replay::{self, Options};

/// Tool names of varied length: the tool-error hint names the tool.
const TOOLS: &[&str] = &[
    "Bash",
    "read_file",
    "OpenVent",
    "irrigation.set_valve",
    "greenhouse_climate_controller_set_vent_opening_percent",
];
/// Tool arguments.
const ARGS: &[&str] = &[r#"{"vent": 2, "percent": 40}"#, r#"{"row": 3, "litres": 20}"#, "{}"];
/// Start instants: plain days, and just before DST changes in Europe and
/// North America.
const STARTS: &[&str] = &[
    "2026-07-22T02:00:00Z",
    "2026-03-29T00:30:00Z",
    "2026-10-25T00:30:00Z",
    "2026-03-08T06:30:00Z",
    "2026-11-01T05:30:00Z",
    "2026-12-31T23:50:00Z",
];

/// A clock move.
#[derive(Debug, Clone, Copy)]
pub enum Advance {
    /// Exactly `time_interval`.
    Interval,
    /// `time_interval` and a few seconds.
    IntervalPlus(u32),
    /// Whole minutes, either way.
    Minutes(i32),
    /// Days ahead.
    Days(u32),
    /// A watch's time rule (the `i`th of its `min_interval`s and
    /// `max_interval`s, in turn) and a second either way, or not.
    WatchInterval(usize, i32),
}

/// Token counts.
#[derive(Debug, Clone, Copy)]
pub enum Tokens {
    /// Around the reminder threshold.
    NearThreshold(i64),
    /// A share of the compression trigger, in percent.
    Share(u32),
}

/// One event of a session.
#[derive(Debug, Clone)]
pub enum Event {
    /// A reasoning step.
    Step,
    /// A user message: a new reply.
    User,
    /// A tool call and its result, `repeat` times in a row.
    Call { tool: usize, args: usize, fails: bool, repeat: usize },
    /// The plan: pending, in progress, completed.
    Tasks(u8, u8, u8),
    /// The clock moves.
    Advance(Advance),
    /// The token count changes.
    Tokens(Tokens),
    /// A compression keeps the newest messages.
    Compress(usize),
    /// Every watched field reads the `READINGS` entry at this index.
    Read(usize),
}

/// Readings a watched field takes: a slow warming, jumps across common
/// thresholds, a long text, and unavailable.
const READINGS: &[Option<&str>] = &[
    Some("20.0 °C"),
    Some("20.5 °C"),
    Some("21.75 °C"),
    Some("24.0 °C"),
    Some("27.5 °C"),
    Some("28.25 °C"),
    Some("31.0 °C"),
    Some("9.5 °C"),
    Some("-3.25 °C (north bed, sensor 3, averaged over the last ten minutes)"),
    None,
];

/// A session: its start and its events.
#[derive(Debug, Clone)]
pub struct Session {
    start: usize,
    events: Vec<Event>,
}

fn event_strategy() -> impl Strategy<Value = Event> {
    prop_oneof![
        10 => Just(Event::Step),
        2 => Just(Event::User),
        4 => (0..TOOLS.len(), 0..ARGS.len(), prop::bool::weighted(0.7), 1usize..5)
            .prop_map(|(tool, args, fails, repeat)| Event::Call { tool, args, fails, repeat }),
        2 => (0u8..12, 0u8..3, 0u8..4).prop_map(|(p, i, c)| Event::Tasks(p, i, c)),
        4 => prop_oneof![
            2 => Just(Advance::Interval),
            1 => (1u32..120).prop_map(Advance::IntervalPlus),
            3 => (-30i32..240).prop_map(Advance::Minutes),
            1 => (1u32..3).prop_map(Advance::Days),
        ]
        .prop_map(Event::Advance),
        2 => prop_oneof![(-2i64..3).prop_map(Tokens::NearThreshold), (0u32..120).prop_map(Tokens::Share)].prop_map(Event::Tokens),
        1 => (0usize..4).prop_map(Event::Compress),
    ]
}

/// Sessions; with a watch configured, some events read the watched fields
/// (without one, the sessions are as before: the reference has no live
/// fields).
fn session_strategy(max_events: usize, watching: bool) -> BoxedStrategy<Session> {
    let event = match watching {
        true => prop_oneof![
            10 => event_strategy(),
            1 => (0..READINGS.len()).prop_map(Event::Read),
            1 => (0usize..8, -1i32..=1).prop_map(|(i, d)| Event::Advance(Advance::WatchInterval(i, d))),
        ]
        .boxed(),
        false => event_strategy().boxed(),
    };
    (0..STARTS.len(), prop::collection::vec(event, 1..=max_events.max(1)))
        .prop_map(|(start, events)| Session { start, events })
        .boxed()
}

/// The longest clock move a session makes (a year): longer intervals are
/// aimed at with it.
const MAX_MOVE_SECONDS: f64 = 366.0 * 86_400.0;

/// The configuration's numbers the sessions aim at, read by replaying one
/// step with it.
#[derive(Debug, Clone)]
struct Aims {
    interval_seconds: f64,
    /// The watches' `min_interval`s and `max_interval`s, in seconds.
    watch_intervals: Vec<f64>,
    reminder_tokens: f64,
    trigger_tokens: i64,
}

/// The watched fields of a configuration (a `config` event's value).
fn watched(config: &Value) -> Vec<String> {
    config["injection_config"]["watch"]
        .as_object()
        .map_or_else(Vec::new, |w| w.keys().cloned().collect())
}

/// Writes a session as a replay trace of `config` (a `config` event's value).
fn trace(config: &Value, session: &Session, aims: &Aims) -> String {
    let mut lines = vec![
        json!({"config": config}),
        json!({"set_clock": STARTS[session.start]}),
        json!({"user": "Start the round."}),
    ];
    let mut calls = 0;
    let mut clock = chrono::DateTime::parse_from_rfc3339(STARTS[session.start])
        .map_or(0, |t| t.timestamp_micros());
    let fields = watched(config);
    for e in &session.events {
        match *e {
            Event::Read(i) => {
                let readings: serde_json::Map<String, Value> =
                    fields.iter().map(|f| (f.clone(), json!(READINGS[i]))).collect();
                lines.push(json!({ "read": readings }));
            }
            Event::Step => lines.push(json!({"step": {}})),
            Event::User => lines.push(json!({"user": "Status?"})),
            Event::Call { tool, args, fails, repeat } => {
                for _ in 0..repeat {
                    calls += 1;
                    let id = format!("c{calls}");
                    lines.push(
                        json!({"tool_call": {"id": id, "name": TOOLS[tool], "input": ARGS[args]}}),
                    );
                    let (state, output) =
                        if fails { ("error", "failed") } else { ("success", "done") };
                    lines
                        .push(json!({"tool_result": {"id": id, "state": state, "output": output}}));
                }
            }
            Event::Tasks(p, i, c) => {
                let states = [("pending", p), ("in_progress", i), ("completed", c)];
                let list: Vec<&str> = states
                    .iter()
                    .flat_map(|&(s, n)| std::iter::repeat_n(s, usize::from(n)))
                    .collect();
                lines.push(json!({ "tasks": list }));
            }
            Event::Advance(a) => {
                let seconds = match a {
                    // No time rule: nothing to aim at.
                    Advance::WatchInterval(_, _) if aims.watch_intervals.is_empty() => continue,
                    Advance::WatchInterval(i, d) => {
                        aims.watch_intervals[i % aims.watch_intervals.len()] + f64::from(d)
                    }
                    Advance::Interval => aims.interval_seconds,
                    Advance::IntervalPlus(s) => aims.interval_seconds + f64::from(s),
                    Advance::Minutes(m) => f64::from(m) * 60.0,
                    Advance::Days(d) => f64::from(d) * 86_400.0,
                };
                // The clock stays where every tool reads it back (as the
                // fuzzer's does); a move off that range is left out.
                let moved = clock + (seconds * 1e6) as i64;
                if crate::fuzz::CLOCK_RANGE.contains(&moved) {
                    clock = moved;
                    lines.push(json!({ "advance": seconds }));
                }
            }
            Event::Tokens(t) => {
                let tokens = match t {
                    Tokens::NearThreshold(d) => (aims.reminder_tokens.floor() as i64 + d).max(0),
                    Tokens::Share(pct) => aims.trigger_tokens * i64::from(pct) / 100,
                };
                lines.push(json!({ "tokens": tokens }));
            }
            Event::Compress(keep) => lines.push(json!({ "compress": keep })),
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// How to run.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    /// The configuration: a `config` event's value.
    pub config: Value,
    /// The device's hint buffer, in bytes.
    pub hint_capacity: Option<usize>,
    /// Sessions to generate.
    pub cases: u32,
    /// The generator's seed.
    pub seed: u64,
    /// Most events per session, at most [`fuzz::MAX_STEPS`](crate::fuzz::MAX_STEPS).
    pub steps: usize,
    /// How long shrinking may take; when it is up, the smallest session
    /// found so far is reported.
    pub shrink_time: Duration,
}

/// The largest hint buffer `fuzz --config` tries (1 MiB): replay allocates
/// it for every step.
pub const MAX_HINT_CAPACITY: usize = 1 << 20;

/// The longest hint seen.
#[derive(Debug, Clone, Default)]
pub struct Longest {
    /// Its length in bytes.
    pub bytes: usize,
    /// The session (from 1) and the step (from 1) that made it.
    pub at: (u32, usize),
    /// Its text.
    pub text: String,
}

/// What a run found.
#[derive(Debug, Clone, Default)]
pub struct TuneReport {
    /// Sessions run.
    pub sessions: u32,
    /// Steps run.
    pub steps: u64,
    /// Steps that made a hint.
    pub hints: u64,
    /// Steps at which each dimension fired: time, tasks, context length,
    /// tool error, and (with a watch configured) a watch.
    pub fired: [u64; 5],
    /// Whether the configuration watches a field.
    pub watching: bool,
    /// Whether a watch has a time rule (`min_interval`, `max_interval`).
    pub timed: bool,
    /// Steps at which a watch fired by its heartbeat, and at which one's
    /// change was held back (throttled).
    pub time_rules: [u64; 2],
    /// The longest hint.
    pub longest: Longest,
    /// Steps whose hint did not fit, and the sessions they were in.
    pub too_long: (u64, u32),
    /// The shrunk session whose hint does not fit: its trace, its events
    /// before shrinking and after, and its steps.
    pub shrunk: Option<(String, usize, usize, Vec<StepRecord>)>,
    /// The trace of the session with the longest hint.
    pub longest_trace: String,
    /// Shrinking ran out of time after this long: `shrunk` is the smallest
    /// session found by then.
    pub shrink_cut: Option<Duration>,
}

/// The dimensions, as the summary names them.
const DIMENSIONS: [&str; 5] = ["time", "tasks", "context-length", "tool-error", "watch"];

fn run(trace: &str, capacity: Option<usize>) -> Result<Vec<StepRecord>, String> {
    let opts = Options { json: true, hint_capacity: capacity, ..Options::default() };
    replay::replay_with_records(trace, &opts, &mut std::io::sink(), None)
        .map(|(_, records)| records)
        .map_err(|e| e.to_string())
}

fn seed_rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes(),
        );
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Runs the sessions, then shrinks the first whose hint does not fit.
///
/// # Errors
///
/// When an option is out of its range or the configuration is invalid
/// (the message names the option or the field).
pub fn tune(options: &TuneOptions) -> Result<TuneReport, String> {
    if !(1..=crate::fuzz::MAX_STEPS).contains(&options.steps) {
        return Err(format!("steps: {} is not in 1..={}", options.steps, crate::fuzz::MAX_STEPS));
    }
    if let Some(n) = options.hint_capacity.filter(|n| !(1..=MAX_HINT_CAPACITY).contains(n)) {
        return Err(format!("hint capacity: {n} is not in 1..={MAX_HINT_CAPACITY}"));
    }
    let probe = format!("{}\n{{\"step\": {{}}}}\n", json!({"config": options.config}));
    let first = run(&probe, None).map_err(|e| e.replacen("line 1: ", "", 1))?;
    let aims = first.first().map_or(
        Aims {
            interval_seconds: 1800.0,
            watch_intervals: Vec::new(),
            reminder_tokens: 0.0,
            trigger_tokens: 0,
        },
        |r| Aims {
            // An interval no clock move can reach (`inf`, `1e308`) is aimed
            // at with the longest move instead.
            interval_seconds: (r.time_interval_hours * 3600.0).min(MAX_MOVE_SECONDS),
            watch_intervals: r
                .watches
                .iter()
                .flat_map(|w| [w.min_interval, w.max_interval])
                .flatten()
                .map(|s| s.min(MAX_MOVE_SECONDS))
                .collect(),
            reminder_tokens: r.reminder_tokens,
            trigger_tokens: r.trigger_tokens,
        },
    );
    let mut runner = TestRunner::new_with_rng(
        PtConfig { cases: options.cases, ..PtConfig::default() },
        seed_rng(options.seed),
    );
    let strategy = session_strategy(options.steps, !watched(&options.config).is_empty());
    let mut report = TuneReport {
        watching: !watched(&options.config).is_empty(),
        timed: !aims.watch_intervals.is_empty(),
        ..TuneReport::default()
    };
    let mut failing = None;
    for case in 1..=options.cases {
        let tree = strategy.new_tree(&mut runner).map_err(|e| e.to_string())?;
        let text = trace(&options.config, &tree.current(), &aims);
        let records = run(&text, options.hint_capacity)?;
        report.sessions = case;
        report.steps += records.len() as u64;
        let mut overflowed = false;
        for r in &records {
            let fired = [
                r.time,
                r.tasks.is_some(),
                r.context_length,
                r.tool_error.is_some(),
                r.watches.iter().any(|w| w.fired),
            ];
            for (count, f) in report.fired.iter_mut().zip(fired) {
                *count += u64::from(f);
            }
            let why =
                [r.watches.iter().any(|w| w.heartbeat), r.watches.iter().any(|w| w.throttled)];
            for (count, f) in report.time_rules.iter_mut().zip(why) {
                *count += u64::from(f);
            }
            if let Some(hint) = &r.hint {
                report.hints += 1;
                if hint.len() > report.longest.bytes {
                    report.longest =
                        Longest { bytes: hint.len(), at: (case, r.step), text: hint.clone() };
                    report.longest_trace.clone_from(&text);
                }
            }
            if r.too_long.is_some() {
                report.too_long.0 += 1;
                overflowed = true;
            }
        }
        if overflowed {
            report.too_long.1 += 1;
            if failing.is_none() {
                failing = Some(tree);
            }
        }
    }
    if let Some(tree) = failing {
        let before = tree.current().events.len();
        let too_long = |s: &Session| {
            run(&trace(&options.config, s, &aims), options.hint_capacity)
                .is_ok_and(|rs| rs.iter().any(|r| r.too_long.is_some()))
        };
        let started = Instant::now();
        let (best, cut) = shrink(tree, too_long, started + options.shrink_time);
        report.shrink_cut = cut.then(|| started.elapsed());
        let text = trace(&options.config, &best, &aims);
        let records = run(&text, options.hint_capacity)?;
        report.shrunk = Some((text, before, best.events.len(), records));
    }
    Ok(report)
}

/// The smallest session `fails` still holds for, and whether `deadline`
/// cut the search short (the smallest found by then is returned).
fn shrink(
    mut tree: impl ValueTree<Value = Session>,
    fails: impl Fn(&Session) -> bool,
    deadline: Instant,
) -> (Session, bool) {
    // proptest's shrinking: simplify while the session still fails, step
    // back (complicate) when it does not.
    let mut best = tree.current();
    if tree.simplify() {
        for _ in 0..4096 {
            if Instant::now() >= deadline {
                return (best, true);
            }
            if fails(&tree.current()) {
                best = tree.current();
                if !tree.simplify() {
                    break;
                }
            } else if !tree.complicate() {
                break;
            }
        }
    }
    // proptest keeps an event whose removal it tried before a later
    // simplification: one more pass drops each event that is not needed.
    for i in (0..best.events.len()).rev() {
        if Instant::now() >= deadline {
            return (best, true);
        }
        let mut fewer = best.clone();
        fewer.events.remove(i);
        if !fewer.events.is_empty() && fails(&fewer) {
            best = fewer;
        }
    }
    (best, false)
}

/// The summary printed at the end of a run.
pub fn summary(report: &TuneReport, capacity: Option<usize>) -> String {
    let mut s = format!(
        "fuzz --config: {} sessions, {} steps, {} hints\n",
        report.sessions, report.steps, report.hints
    );
    let per100 =
        |n: u64| if report.steps == 0 { 0.0 } else { n as f64 * 100.0 / report.steps as f64 };
    let shown = if report.watching { DIMENSIONS.len() } else { DIMENSIONS.len() - 1 };
    let rates: Vec<String> = DIMENSIONS
        .iter()
        .zip(report.fired)
        .take(shown)
        .map(|(d, n)| format!("{d} {:.1}", per100(n)))
        .collect();
    let _ = writeln!(s, "fired per 100 steps: {}", rates.join(", "));
    if report.timed {
        let [heartbeat, throttled] = report.time_rules;
        let _ = writeln!(
            s,
            "watch time rules per 100 steps: heartbeat {:.1}, throttled {:.1}",
            per100(heartbeat),
            per100(throttled)
        );
    }
    let (session, step) = report.longest.at;
    let _ = writeln!(
        s,
        "longest hint: {} bytes (session {session}, step {step})",
        report.longest.bytes
    );
    for line in report.longest.text.lines() {
        let _ = writeln!(s, "  | {line}");
    }
    if let Some(capacity) = capacity {
        match report.too_long {
            (0, _) => {
                let _ = writeln!(s, "hint capacity {capacity} bytes: every hint fits");
            }
            (steps, sessions) => {
                let _ = writeln!(s, "hint capacity {capacity} bytes: {steps} steps in {sessions} sessions make a hint that does not fit");
            }
        }
    }
    if let Some((text, before, after, records)) = &report.shrunk {
        if let Some(took) = report.shrink_cut {
            let _ = writeln!(
                s,
                "shrinking stopped at its bound after {:.1} s: the session below is the smallest found by then",
                took.as_secs_f64()
            );
        }
        if let Some(r) = records.iter().find(|r| r.too_long.is_some()) {
            let (needed, capacity) = r.too_long.unwrap_or_default();
            let _ = writeln!(
                s,
                "shrunk from {before} events to {after}: step {} (trace line {}) gives HintTooLong {{ needed: {needed}, capacity: {capacity} }}",
                r.step,
                r.line
            );
        }
        for line in text.lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
    s
}
