//! The firmware in QEMU: end to end with the TMP105 and without it, a
//! forced panic, and the size budget.
//!
//! `cargo xtask test` builds the firmware (`firmware/`, release, and its
//! `force-panic` and `force-hardfault` variants), installs QEMU and
//! defmt-print when missing, and passes them here: `ENVAWARE_QEMU`, `ENVAWARE_DEFMT_PRINT`,
//! `ENVAWARE_FIRMWARE_ELF`, `ENVAWARE_FIRMWARE_PANIC_ELF`,
//! `ENVAWARE_FIRMWARE_HARDFAULT_ELF`. Without them the
//! defaults are `qemu-system-arm` and `defmt-print` on the PATH (or in
//! `~/.cargo/bin`) and the images under `firmware/target/`. A missing tool
//! or image skips the check under a plain `cargo test` and fails it under
//! `cargo xtask test` and CI (`xtask::needs`).
//!
//! Each run is driven by a handshake (see the xtask library's `qemu` module): the
//! temperature of step `i` is set over QMP before the firmware is let into
//! step `i`, and QEMU runs with `-icount`, so nothing here depends on
//! timing. Every run starts the board's wall clock at [`EPOCH`], so two runs
//! are identical. Every run is bounded by a timeout.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::json;
use xtask::model;
use xtask::needs;
use xtask::qemu::{self, RunOptions, RunResult, EPOCH, TEMPERATURES};

/// As `xtask/src/firmware.rs` says why.
const FLASH_BUDGET: u64 = 192 * 1024;
const RAM_BUDGET: u64 = 48 * 1024;

/// The steps where, with [`TEMPERATURES`], the temperature watch alone
/// makes a hint: each reading swings more than 2.0 °C from the last one
/// told, but steps 1 to 5, 7 and 8 come less than 6 s (the watch's floor,
/// `min_interval`) after a telling: only step 9's change is told at once.
const WATCH_ONLY: [usize; 1] = [9];

/// The temperatures of `cargo xtask demo --temperatures 20,20.5,25,25.2,29,26`
/// (the last one holds for the later steps), in milli-°C.
const DEMO_WARMING: [i32; 6] = [20_000, 20_500, 25_000, 25_200, 29_000, 26_000];

/// The built-in fields the script makes due at each step, in a run nobody
/// wakes before step 5 (see `firmware/src/agent/session.rs`); `None`: no
/// injection.
type Due = [Option<&'static [&'static str]>; 10];
const DUE: Due = [
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

/// [`DUE`] in a run the environment wakes before step 4 (a change the
/// floor held back at step 3, told once it has passed): that reply, with no
/// user message, splits the three failed `OpenVent` calls across two
/// messages, and step 5 tells no tool error.
const DUE_WOKEN_BEFORE_4: Due = {
    let mut due = DUE;
    due[5] = None;
    due
};

/// What every run needs: QEMU, defmt-print and the release image.
struct Board {
    qemu: PathBuf,
    defmt_print: PathBuf,
    elf: PathBuf,
}

/// The board, or `None` when the check skips without it (`xtask::needs`).
fn board() -> Option<Board> {
    Some(Board {
        qemu: needs::or_skip(needs::tool("ENVAWARE_QEMU", "qemu-system-arm"))?,
        defmt_print: needs::or_skip(needs::tool("ENVAWARE_DEFMT_PRINT", "defmt-print"))?,
        elf: image(
            "ENVAWARE_FIRMWARE_ELF",
            "firmware/target/thumbv7m-none-eabi/release/envaware-firmware",
        )?,
    })
}

/// A firmware image `cargo xtask test` builds; `None` when the check skips.
fn image(var: &str, default: &str) -> Option<PathBuf> {
    needs::or_skip(needs::built_file(var, default))
}

impl Board {
    fn run(&self, elf: &Path, sensor: bool) -> RunResult {
        self.run_at(elf, sensor, Some(EPOCH))
    }

    /// A run starting the board's wall clock at `epoch`; `None`: the host's time
    /// (semihosting `SYS_TIME`), as `cargo xtask demo` runs it.
    fn run_at(&self, elf: &Path, sensor: bool, epoch: Option<i64>) -> RunResult {
        self.run_with(elf, sensor, epoch, &TEMPERATURES)
    }

    /// A run with `temperatures`, one per step (the last one holding).
    fn run_with(
        &self,
        elf: &Path,
        sensor: bool,
        epoch: Option<i64>,
        temperatures: &[i32],
    ) -> RunResult {
        self.run_resetting(elf, sensor, epoch, temperatures, None, &[])
    }

    /// A run that resets the MCU after step `reset_after`, if any.
    fn run_resetting(
        &self,
        elf: &Path,
        sensor: bool,
        epoch: Option<i64>,
        temperatures: &[i32],
        reset_after: Option<usize>,
        environment: &[(usize, i32)],
    ) -> RunResult {
        let opts = RunOptions {
            qemu: self.qemu.clone(),
            defmt_print: self.defmt_print.clone(),
            elf: elf.to_path_buf(),
            sensor,
            temperatures_milli: temperatures.to_vec(),
            // Under -icount a run takes 20 to 40 s; the margin is for a
            // loaded machine.
            timeout: Duration::from_secs(180),
            echo: false,
            epoch,
            reset_after,
            environment_milli: environment.to_vec(),
            model_port: None,
            model_stream: false,
            broker_port: None,
            device: None,
            steps: None,
            live: None,
        };
        qemu::run(&opts).unwrap_or_else(|e| panic!("QEMU run failed: {e}"))
    }

    /// The run with the sensor, shared by the tests that read it.
    fn sensor_run(&self) -> &'static RunResult {
        static RUN: OnceLock<RunResult> = OnceLock::new();
        RUN.get_or_init(|| self.run(&self.elf, true))
    }
}

/// One step of the decoded log.
#[derive(Debug)]
struct StepLog {
    /// The hint's `(key, value)` fields, in order; `None` when none was injected.
    fields: Option<Vec<(String, String)>>,
    /// The step's whole text.
    text: String,
}

/// The scripted steps of the decoded log (an environment step's lines are
/// not part of the step before it: see [`environment_steps`]).
fn steps(log: &str) -> Vec<StepLog> {
    split_steps(log).0
}

/// The environment steps of the decoded log (issue 22), with their headers.
fn environment_steps(log: &str) -> Vec<(String, StepLog)> {
    split_steps(log).1
}

fn split_steps(log: &str) -> (Vec<StepLog>, Vec<(String, StepLog)>) {
    let mut steps: Vec<StepLog> = Vec::new();
    let mut environment: Vec<(String, StepLog)> = Vec::new();
    let mut in_environment = false;
    for line in log.lines() {
        if line.starts_with("=== step ") {
            steps.push(StepLog { fields: None, text: String::new() });
            in_environment = false;
            continue;
        }
        if line.starts_with("=== environment step ") {
            environment.push((line.to_string(), StepLog { fields: None, text: String::new() }));
            in_environment = true;
            continue;
        }
        let step = if in_environment {
            environment.last_mut().map(|e| &mut e.1)
        } else {
            steps.last_mut()
        };
        let Some(step) = step else { continue };
        step.text.push_str(line);
        step.text.push('\n');
        if line.starts_with("<system-reminder>") {
            step.fields = Some(Vec::new());
        } else if let (Some(fields), Some(rest)) = (step.fields.as_mut(), line.strip_prefix('<')) {
            if let Some((key, rest)) = rest.split_once('>') {
                if let Some(value) = rest.strip_suffix(&format!("</{key}>")) {
                    fields.push((key.to_string(), value.to_string()));
                }
            }
        }
    }
    (steps, environment)
}

fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Seconds since the epoch of a `%Y-%m-%dT%H:%M:%S` wall time (its zone
/// does not matter for differences within a day).
fn seconds(time: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| {
        time.get(r)
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or_else(|| panic!("bad time {time:?}"))
    };
    assert_eq!(time.len(), 19, "bad time {time:?}");
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from civil (Howard Hinnant).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)
}

/// Checks the fields of every step against the script; `temperature`
/// gives the expected reading of step `i`.
/// (and a hint of the live fields alone at the `watch_only` steps).
/// `due` gives the built-in fields of each step, `evicted` the messages
/// the compression after step 7's reply evicts.
fn check_schedule(
    result: &RunResult,
    due: &Due,
    temperature: impl Fn(usize) -> String,
    watch_only: &[usize],
    evicted: usize,
) {
    let steps = steps(&result.log);
    assert_eq!(steps.len(), DUE.len(), "steps in the log:\n{}", result.log);
    for (i, (step, due)) in steps.iter().zip(due.iter().copied()).enumerate() {
        let due = due.or(watch_only.contains(&i).then_some(&[]));
        match (due, &step.fields) {
            (None, None) => {
                assert!(
                    step.text.contains("(no injection; uptime read: false)"),
                    "step {i}: the uptime must not be read:\n{}",
                    step.text
                )
            }
            (Some(due), Some(fields)) => {
                let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
                let mut expected = due.to_vec();
                expected.extend(["temperature", "uptime"]);
                assert_eq!(keys, expected, "step {i}:\n{}", step.text);
                assert_eq!(
                    field(fields, "temperature"),
                    Some(temperature(i).as_str()),
                    "step {i}:\n{}",
                    step.text
                );
                let uptime = field(fields, "uptime").unwrap_or("");
                assert!(
                    uptime.ends_with(" s") && uptime.contains('.'),
                    "step {i}: uptime {uptime:?}"
                );
            }
            (due, fields) => panic!("step {i}: expected {due:?}, got {fields:?}:\n{}", step.text),
        }
    }
    let fields = |i: usize| steps[i].fields.as_deref().unwrap_or(&[]);
    assert_eq!(field(fields(0), "timezone"), Some("Europe/Berlin"));
    // The time is injected again once more than 36 s (0.01 h) have passed:
    // the script lets 40 s pass before step 6.
    let (t0, t6) = (
        field(fields(0), "current-time").unwrap_or(""),
        field(fields(6), "current-time").unwrap_or(""),
    );
    let elapsed = seconds(t6) - seconds(t0);
    assert!((40..=60).contains(&elapsed), "{t0} -> {t6}: {elapsed} s");
    assert_eq!(
        field(fields(1), "tasks"),
        Some("You have 0 in-progress tasks and 3 pending tasks. Use `TaskList` to view them if you don't know.")
    );
    if due[5].is_some() {
        assert_eq!(
            field(fields(5), "tool-error"),
            Some("The last 3 calls to 'OpenVent' with the same arguments all failed. Stop retrying the same call as-is, check the error message and try a different approach.")
        );
    }
    assert_eq!(
        field(fields(7), "context-length"),
        Some("Your current context contains 2600 tokens. When reaching 3276 tokens, your context will be compressed.")
    );
    // The reply to step 7 calls `CompressContext`: the device compresses
    // before step 8.
    assert!(
        steps[7].text.contains(&format!("context compressed: {evicted} messages evicted, 1 kept")),
        "{}",
        steps[7].text
    );
    assert_eq!(
        field(fields(8), "tasks"),
        Some("You have 1 in-progress tasks and 1 pending tasks. Use `TaskList` to view them if you don't know.")
    );
}

#[test]
fn end_to_end_each_hint_carries_the_temperature_set_over_qmp() {
    let Some(board) = board() else { return };
    let result = board.sensor_run();
    assert_eq!(result.status, Some(0), "{}\n{}", result.log, result.stderr);
    assert!(result.finished && result.steps == DUE.len(), "{result:?}");
    assert_eq!(result.set_per_step, TEMPERATURES.to_vec());
    // Step 3's change, held back by the floor, is told before step 4 once
    // it has passed; step 5's before step 6.
    let env = environment_steps(&result.log);
    let headers: Vec<&str> = env.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(
        headers,
        [
            "=== environment step before step 4: woken by temperature: 12.0625 °C",
            "=== environment step before step 6: woken by temperature: 18.75 °C"
        ]
    );
    check_schedule(
        result,
        &DUE_WOKEN_BEFORE_4,
        |i| qemu::expected_reading(TEMPERATURES[i]),
        &WATCH_ONLY,
        9,
    );
    // Every step's reading is more than 2.0 °C from the one told before it;
    // the floor (6 s) holds back those that come sooner after a telling.
    assert_eq!(watch_fired(&result.log), [0, 6, 9]);
    // The ages as measured (the board's work is board time under -icount:
    // a change of the code moves them by a millisecond or so).
    let expected = [
        ("value", None),
        ("throttled", Some(1.828)),
        ("throttled", Some(2.844)),
        ("throttled", Some(5.196)),
        ("throttled", Some(1.442)),
        ("throttled", Some(3.804)),
        ("value", Some(38.170)),
        ("throttled", Some(3.881)),
        ("throttled", Some(2.896)),
        ("value", Some(12.843)),
    ];
    let why = watch_why(&result.log);
    assert_eq!(why.len(), expected.len(), "{why:?}");
    for (i, (got, (word, age))) in why.iter().zip(expected).enumerate() {
        let (w, rest) = got.split_once(", ").unwrap_or((got, ""));
        assert_eq!(w, word, "step {i}: {got}");
        match age {
            None => assert_eq!(rest, "never told", "step {i}"),
            Some(age) => {
                let told: f64 = rest
                    .strip_prefix("told ")
                    .and_then(|r| r.strip_suffix(" s ago"))
                    .and_then(|r| r.parse().ok())
                    .unwrap_or_else(|| panic!("step {i}: {got}"));
                assert!((told - age).abs() < 0.05, "step {i}: {got}, measured {age} s");
            }
        }
    }
    // The readings as the firmware prints them.
    assert_eq!(qemu::expected_reading(-4_250), "-4.25 °C");
    assert_eq!(qemu::expected_reading(12_063), "12.0625 °C");
    assert_eq!(qemu::expected_reading(30_000), "30.0 °C");
    assert!(
        result.log.contains("session done: 10 steps, 8 hints, 12 sensor reads, 0 failed"),
        "{}",
        result.log
    );
    // The wall clock starts at EPOCH (01:00:00 in Berlin) and advances with SysTick.
    let steps = steps(&result.log);
    let time = |i: usize| {
        steps[i].fields.as_deref().and_then(|f| field(f, "current-time")).map(str::to_string)
    };
    assert_eq!(time(0).as_deref(), Some("2026-01-01T01:00:00"));
    // 47.5 s of script plus 6 model replies of 0.8 s (embassy-time timers).
    assert_eq!(time(6).as_deref(), Some("2026-01-01T01:00:52"));
    // 52.5 s of script, 8 model replies of 0.8 s and the board's own work,
    // which under `-icount` is board time too (the session log's items included).
    assert_eq!(time(8).as_deref(), Some("2026-01-01T01:00:59"));
}

#[test]
fn without_the_sensor_the_hint_says_unavailable_and_the_run_completes() {
    let Some(board) = board() else { return };
    // On the host's clock, as the demo runs: the schedule does not depend on the date.
    let result = board.run_at(&board.elf, false, None);
    assert_eq!(result.status, Some(0), "{}\n{}", result.log, result.stderr);
    assert!(result.finished, "{result:?}");
    check_schedule(&result, &DUE, |_| "unavailable".to_string(), &[], 7);
    assert!(
        result.log.contains("TMP105 unavailable (configure): ArbitrationLoss"),
        "{}",
        result.log
    );
    // Read at every step (the temperature is watched); unavailable never fires.
    assert_eq!(watch_fired(&result.log), [0usize; 0]);
    assert!(
        result.log.contains("session done: 10 steps, 6 hints, 0 sensor reads, 10 failed"),
        "{}",
        result.log
    );
}

/// What each scripted step's `watch temperature T: W, told A ago` line
/// says after the reading: why the watch fired or not (`value`,
/// `heartbeat`, `throttled`, `quiet`) and the telling's age.
fn watch_why(log: &str) -> Vec<String> {
    steps(log)
        .iter()
        .map(|s| {
            s.text
                .lines()
                .find_map(|l| l.strip_prefix("watch temperature "))
                .and_then(|rest| rest.split_once(": "))
                .map_or_else(String::new, |(_, why)| why.to_string())
        })
        .collect()
}

/// The scripted steps whose temperature watch fired (by value or
/// heartbeat), from the log's `watch` lines.
fn watch_fired(log: &str) -> Vec<usize> {
    let fired = |why: &String| why.starts_with("value") || why.starts_with("heartbeat");
    watch_why(log).iter().enumerate().filter(|(_, w)| fired(w)).map(|(i, _)| i).collect()
}

/// `cargo xtask demo --temperatures 20,20.5,25,25.2,29,26`, as the demo runs
/// it (the host's clock): the watch fires where the rule says. Step 0:
/// nothing told; 1: 0.5 °C from 20.0 (the tasks hint tells 20.5); 2: 4.5
/// from 20.5, but 2.9 s after the telling: held back by the 6 s floor; 3:
/// 4.6875 from 20.5, held back (5.2 s); the environment wakes the agent
/// before step 4 with 25.1875 once the floor has passed; 4: 3.8 from
/// 25.1875 (and above 28), held back (1.5 s); 5: 0.8125 from 25.1875, quiet
/// (and, after that reply, no tool error); 6: 26.0 steady, 38 s after the
/// telling: the heartbeat (10 s); 7, 8: 26.0 as told; 9: 13 s after step
/// 8 told it, the heartbeat again.
#[test]
fn the_demo_s_warming_greenhouse_fires_the_watch_where_the_rule_says() {
    let Some(board) = board() else { return };
    let result = board.run_with(&board.elf, true, None, &DEMO_WARMING);
    assert_eq!(result.status, Some(0), "{}\n{}", result.log, result.stderr);
    assert_eq!(watch_fired(&result.log), [0, 6, 9], "{}", result.log);
    let why: Vec<String> = watch_why(&result.log)
        .iter()
        .map(|w| w.split_once(',').map_or(w.clone(), |(why, _)| why.to_string()))
        .collect();
    assert_eq!(
        why,
        [
            "value",
            "quiet",
            "throttled",
            "throttled",
            "throttled",
            "quiet",
            "heartbeat",
            "quiet",
            "quiet",
            "heartbeat"
        ]
    );
    let env: Vec<String> = environment_steps(&result.log).into_iter().map(|e| e.0).collect();
    assert_eq!(env, ["=== environment step before step 4: woken by temperature: 25.1875 °C"]);
    let reading = |i: usize| qemu::expected_reading(DEMO_WARMING[i.min(DEMO_WARMING.len() - 1)]);
    check_schedule(&result, &DUE_WOKEN_BEFORE_4, reading, &[9], 8);
    assert!(
        result.log.contains("session done: 10 steps, 7 hints, 11 sensor reads, 0 failed"),
        "{}",
        result.log
    );
}

/// The demo's temperatures (`cargo xtask demo`), in milli-°C.
const DEMO: [i32; 10] =
    [21_500, 22_250, 23_000, 24_500, 26_000, 27_750, 29_500, 27_000, 25_250, 23_500];

/// `text` with the value of every `<uptime>` field emptied.
fn without_uptime(text: &str) -> String {
    text.lines()
        .map(|l| if l.starts_with("<uptime>") { "<uptime></uptime>" } else { l })
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// issue 22: in the idle time before step 6 the greenhouse reaches 33.0 °C
/// (set over QMP at the board's `~` handshake, as `cargo xtask demo` does).
/// The sensor task, sampling on its own period, finds it, asks the core
/// whether it fires the watch (5.25 °C from the 27.75 °C step 5 read, 3.25
/// from the 24.5 °C told before step 4): first the floor (`min_interval`,
/// 6 s) holds it back, then it wakes the agent: an environment step, whose
/// hint tells the reading, and which the stream marks so that
/// `envaware-sim replay` shows it. Without it, the same idle time wakes the
/// agent for step 5's held-back 27.75 °C instead. The scripted steps'
/// hints are those of that run (uptimes aside), and the log shows readings
/// taken while the agent awaited its model.
#[test]
fn the_environment_wakes_the_agent_and_the_scripted_hints_stay() {
    let Some(board) = board() else { return };
    let plain = board.run_with(&board.elf, true, Some(EPOCH), &DEMO);
    let woke = board.run_resetting(&board.elf, true, Some(EPOCH), &DEMO, None, &[(6, 33_000)]);
    assert_eq!(woke.status, Some(0), "{}\n{}", woke.log, woke.stderr);
    assert_eq!(woke.environment_set, [(6, 33_000)]);
    assert!(plain.environment_set.is_empty(), "{}", plain.log);
    let headers =
        |log: &str| -> Vec<String> { environment_steps(log).into_iter().map(|e| e.0).collect() };
    assert_eq!(
        headers(&plain.log),
        [
            "=== environment step before step 4: woken by temperature: 24.5 °C",
            "=== environment step before step 6: woken by temperature: 27.75 °C"
        ]
    );
    let env = environment_steps(&woke.log);
    assert_eq!(env.len(), 2, "{}", woke.log);
    assert_eq!(env[0].0, "=== environment step before step 4: woken by temperature: 24.5 °C");
    assert_eq!(env[1].0, "=== environment step before step 6: woken by temperature: 33.0 °C");
    assert!(
        woke.log.contains(
            "sensor task: 33.0 °C would fire the temperature watch, but its floor (min_interval) holds it back"
        ),
        "{}",
        woke.log
    );
    assert!(
        woke.log
            .contains("sensor task: 33.0 °C would fire the temperature watch: waking the agent"),
        "{}",
        woke.log
    );
    let fields = env[1].1.fields.as_deref().expect("the environment step's hint");
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["temperature", "uptime"]);
    assert_eq!(field(fields, "temperature"), Some("33.0 °C"));
    assert!(env[1].1.text.contains("watch temperature 33.0 °C: value, told "), "{}", env[1].1.text);
    // The scripted steps: the same hints, the same watches.
    let masked = |log: &str| {
        device_hints(log).iter().map(|h| h.as_deref().map(without_uptime)).collect::<Vec<_>>()
    };
    assert_eq!(masked(&woke.log), masked(&plain.log));
    assert_eq!(watch_fired(&woke.log), watch_fired(&plain.log));
    assert!(
        woke.log.contains(
            "session done: 10 steps, 8 hints, 12 sensor reads, 0 failed, 9 messages evicted"
        ),
        "{}",
        woke.log
    );
    // Sampling goes on while the agent awaits its model.
    let sampled = woke
        .log
        .lines()
        .filter(|l| l.ends_with("(sampled while the agent awaits its model)"))
        .count();
    assert!(sampled >= 10, "{sampled} readings during model waits:\n{}", woke.log);
    // The stream marks the step; the replay shows it and decides the same hint.
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let out = needs::workspace().join("tests/out");
    std::fs::create_dir_all(&out).expect("tests/out");
    let trace_file = out.join("firmware-woken.trace.jsonl");
    std::fs::write(&trace_file, qemu::session_trace(&woke.log)).expect("write the trace");
    let replay = std::process::Command::new(&sim)
        .arg("replay")
        .arg(&trace_file)
        .arg("--json")
        .output()
        .expect("run envaware-sim replay");
    assert!(replay.status.success(), "replay failed: {}", String::from_utf8_lossy(&replay.stderr));
    let replayed = json_lines(&replay.stdout);
    assert_eq!(replayed.len(), 12);
    let woken: Vec<usize> = replayed
        .iter()
        .enumerate()
        .filter(|(_, r)| r.get("woken").is_some())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(woken, [4, 7]);
    assert_eq!(replayed[7]["woken"], json!({"temperature": "33.0 °C"}));
    let env_hint = env[1]
        .1
        .text
        .lines()
        .skip_while(|l| !l.starts_with("<system-reminder>"))
        .take(4)
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(replayed[7]["hint"].as_str(), Some(env_hint.as_str()));
    let text = std::process::Command::new(sim)
        .arg("replay")
        .arg(&trace_file)
        .output()
        .expect("run envaware-sim replay");
    assert!(String::from_utf8_lossy(&text.stdout)
        .contains("woken by temperature: 33.0 °C (the environment started this step)"));
}

/// A run of the demo's session with the model server on UART1 (`stream`:
/// the board asks for streamed replies); the run, the exchange's rows (each
/// request against the replay of the device's streamed session) and the
/// server's log.
fn model_run(
    board: &Board,
    sim: &Path,
    stream: bool,
) -> (RunResult, Vec<model::ExchangeRow>, Vec<serde_json::Value>) {
    let out = needs::workspace().join("tests/out");
    std::fs::create_dir_all(&out).expect("tests/out");
    let name = if stream { "firmware-model-streamed" } else { "firmware-model" };
    let server_log = out.join(format!("{name}-requests.jsonl"));
    let server = model::ModelServer::start(sim, &model::script(), &server_log, 12, 60)
        .unwrap_or_else(|e| panic!("model server: {e}"));
    let opts = RunOptions {
        qemu: board.qemu.clone(),
        defmt_print: board.defmt_print.clone(),
        elf: board.elf.clone(),
        sensor: true,
        temperatures_milli: TEMPERATURES.to_vec(),
        timeout: Duration::from_secs(180),
        echo: false,
        epoch: Some(EPOCH),
        reset_after: None,
        environment_milli: vec![(6, 33_000)],
        model_port: Some(server.port),
        model_stream: stream,
        broker_port: None,
        device: None,
        steps: None,
        live: None,
    };
    let run = qemu::run(&opts);
    server.stop();
    let run = run.unwrap_or_else(|e| panic!("QEMU run failed: {e}"));
    assert_eq!(run.status, Some(0), "{}", run.log);
    assert!(run.finished, "{}", run.log);
    assert!(
        !run.log.contains("model: no reply") && !run.log.contains("model: the reply is refused"),
        "{}",
        run.log
    );
    let trace = out.join(format!("{name}.trace.jsonl"));
    let rows = model::check(sim, &trace, &server_log, &run.log)
        .unwrap_or_else(|e| panic!("{e}\n{}", run.log));
    eprint!("{}", model::table(&rows));
    // 10 scripted steps and, with these temperatures, two environment
    // steps (before steps 4 and 6, as in the run nobody gave a model), one
    // request each.
    assert_eq!(rows.len(), 12, "{}", model::table(&rows));
    assert!(rows.iter().all(|r| r.matches), "{}", model::table(&rows));
    assert!(rows.iter().all(|r| r.request_bytes.is_some()), "{}", model::table(&rows));
    let logged = model::json_lines(&std::fs::read_to_string(&server_log).expect("log"))
        .expect("the server's log");
    (run, rows, logged)
}

/// Issue 36: with a model server on UART1, each model call is a real
/// HTTP/1.1 `POST /v1/chat/completions` (the demo's run: 10 steps and the
/// environment steps before steps 4 and 6), the server's reply is appended
/// to the context through the session's log, the device runs the tools it
/// calls and logs their results, and each request's `messages` are what
/// `envaware-sim replay --json --request openai` computes from the session
/// the device streamed, at that step (with the demo's system prompt given
/// to the replay as a `config` event: the device streams none).
#[test]
fn each_model_call_is_an_http_exchange_whose_messages_the_replay_computes() {
    let Some(board) = board() else { return };
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let (run, _, logged) = model_run(&board, &sim, false);
    // The replies are in the device's context: a later request carries an
    // earlier reply's text (the second, kept until the compression after
    // step 7's reply).
    let second = logged[1]["reply"]["content"].as_str().expect("a text reply").to_string();
    assert!(logged[2]["request"].to_string().contains(&second), "{}", logged[2]);
    // The tools the replies call ran on the board: `OpenVent` three times
    // (its motor is jammed), and their results are in the next request.
    assert_eq!(run.log.matches("tool OpenVent (").count(), 3, "{}", run.log);
    let results = logged[2]["request"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].clone(), m["content"].clone()))
        .collect::<Vec<_>>();
    assert_eq!(
        results,
        [(json!("c1"), json!("3 tasks")), (json!("c2"), json!("updated"))],
        "{}",
        logged[2]["request"]
    );
    assert!(logged.iter().all(|l| l["request"]["stream"] != json!(true)), "{logged:?}");
}

/// Issue 36: asked with `"stream": true`, the server answers in
/// server-sent events over HTTP chunks (tool-call arguments in pieces);
/// the board reads the chunks, accumulates the events as AgentScope does,
/// and its session is the same: each request matches the replay, and the
/// last carries the arguments of the calls streamed before it whole.
#[test]
fn a_streamed_reply_is_read_from_http_chunks_into_the_same_session() {
    let Some(board) = board() else { return };
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let (run, _, logged) = model_run(&board, &sim, true);
    assert_eq!(run.log.matches("bytes received (streamed)").count(), 12, "{}", run.log);
    assert!(logged.iter().all(|l| l["request"]["stream"] == json!(true)), "{logged:?}");
    // The calls streamed before the last request (since the compression,
    // which kept the message that asked for it), with their arguments
    // whole (the server sends them in 16-byte pieces).
    let calls = logged[11]["request"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| (c["id"].clone(), c["function"]["arguments"].clone()))
        .collect::<Vec<_>>();
    assert_eq!(
        calls,
        [
            (json!("c8"), json!("{}")),
            (json!("c9"), json!(r#"{"id": 1, "state": "completed"}"#)),
            (json!("c10"), json!("{}"))
        ],
        "{}",
        logged[11]["request"]
    );
}

#[test]
fn a_panic_exits_qemu_with_a_non_zero_status() {
    let Some(board) = board() else { return };
    let Some(elf) =
        image("ENVAWARE_FIRMWARE_PANIC_ELF", "firmware/target/envaware-firmware-force-panic.elf")
    else {
        return;
    };
    let result = board.run(&elf, true);
    assert_eq!(result.status, Some(101), "{}\n{}", result.log, result.stderr);
    assert!(!result.finished);
    assert!(result.log.contains("forced panic (feature force-panic)"), "{}", result.log);
}

#[test]
fn a_hard_fault_exits_qemu_with_a_non_zero_status() {
    let Some(board) = board() else { return };
    let Some(elf) = image(
        "ENVAWARE_FIRMWARE_HARDFAULT_ELF",
        "firmware/target/envaware-firmware-force-hardfault.elf",
    ) else {
        return;
    };
    let result = board.run(&elf, true);
    assert_eq!(result.status, Some(2), "{}\n{}", result.log, result.stderr);
    assert!(!result.finished);
    assert!(result.log.contains("hard fault at pc"), "{}", result.log);
}

#[test]
fn the_release_image_fits_the_budget() {
    let Some(board) = board() else { return };
    let sections = qemu::elf_sections(&board.elf).unwrap_or_else(|e| panic!("{e}"));
    let size = |names: &[&str]| {
        sections.iter().filter(|(n, _)| names.contains(&n.as_str())).map(|(_, s)| *s).sum::<u64>()
    };
    let flash = size(&[".vector_table", ".text", ".rodata", ".data"]);
    let result = board.sensor_run();
    let stack = qemu::stack_high_water(&result.log)
        .unwrap_or_else(|| panic!("no stack high-water mark in\n{}", result.log));
    let ram = size(&[".data", ".bss", ".uninit"]) + stack;
    eprintln!("flash {flash} B, RAM {ram} B (peak stack {stack} B)");
    assert!(stack > 1024, "the stack measurement is implausible: {stack} B");
    assert!(flash <= FLASH_BUDGET, "flash {flash} B is over the {FLASH_BUDGET} B budget");
    assert!(ram <= RAM_BUDGET, "RAM {ram} B (stack {stack} B) is over the {RAM_BUDGET} B budget");
}

#[test]
fn runs_are_deterministic_under_icount() {
    let Some(board) = board() else { return };
    // The same image, start time and temperatures give the same log, board
    // times included, to the millisecond: the handshake leaves no room for a
    // race, and under -icount the board's time is its instruction count.
    let uptimes = |r: &RunResult| -> Vec<String> {
        steps(&r.log)
            .into_iter()
            .filter_map(|s| s.fields)
            .filter_map(|f| field(&f, "uptime").map(str::to_string))
            .collect()
    };
    let (first, second) = (board.sensor_run(), board.run(&board.elf, true));
    // The scripted steps' hints: 0, 1 and 6 to 9 (the floor holds back 2 to 5).
    assert_eq!(uptimes(first).len(), 6);
    assert_eq!(uptimes(&second), uptimes(first));
    assert_eq!(second.log, first.log);
}

/// The messages each decision read, from the firmware's log.
fn messages_read(log: &str) -> Vec<(usize, usize)> {
    log.lines()
        .filter_map(|l| l.split_once("decision read ").map(|(_, rest)| rest))
        .filter_map(|rest| {
            let (read, rest) = rest.split_once(" messages of ")?;
            Some((read.parse().ok()?, rest.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn the_session_runs_on_the_tracked_context_reading_constant_messages_per_decision() {
    let Some(board) = board() else { return };
    let result = board.sensor_run();
    let reads = messages_read(&result.log);
    // One per step, the two environment steps (before steps 4 and 6) included.
    assert_eq!(reads.len(), DUE.len() + 2, "one decision per step:\n{}", result.log);
    eprintln!("(messages read, context length) per decision: {reads:?}");
    // The context grows from 1 to 7 messages before a compression keeps 1;
    // once the time is recorded, each decision reads the same few messages
    // (the newest, and the one holding the recorded time when the tracker
    // reads it back), however long the context is.
    let lengths: Vec<usize> = reads.iter().map(|r| r.1).collect();
    assert!(lengths.iter().max() > lengths.first(), "the context must grow: {lengths:?}");
    for (i, (read, len)) in reads.iter().enumerate() {
        assert!(*read <= 3, "step {i}: {read} messages read of {len}");
    }
    let recorded: Vec<usize> = reads[1..8].iter().map(|r| r.0).collect();
    assert!(recorded.iter().all(|&r| r == recorded[0]), "steps 1..7 read {recorded:?}");
    let most = reads.iter().map(|r| r.0).max().unwrap_or(0);
    assert!(
        result.log.contains(&format!("at most {most} messages read per decision")),
        "{}",
        result.log
    );
}

/// The hint of each step as the device printed it (`None`: no injection).
fn device_hints(log: &str) -> Vec<Option<String>> {
    steps(log)
        .iter()
        .map(|s| {
            // The streamed lines hold earlier hints, JSON-escaped: skip them.
            let text: String = s
                .text
                .lines()
                .filter(|l| !l.starts_with(qemu::STREAM_PREFIX))
                .flat_map(|l| [l, "\n"])
                .collect();
            let start = text.find("<system-reminder>")?;
            let end =
                text[start..].find("</system-reminder>")? + start + "</system-reminder>".len();
            Some(text[start..end].to_string())
        })
        .collect()
}

fn json_lines(text: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(text)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The session the device streamed as AgentScope JSON, replayed by
/// `envaware-sim replay` on the desktop, gives the device's hints step by
/// step; AgentScope 2.0.11 itself, run on the scenarios the replay emits,
/// gives the same.
#[test]
fn the_streamed_session_replays_to_the_devices_hints_and_agentscope_agrees() {
    let Some(board) = board() else { return };
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let Some(python) = needs::or_skip(needs::reference_python()) else { return };
    let result = board.sensor_run();
    assert!(
        !result.log.contains("stream: "),
        "the device could not stream a line:\n{}",
        result.log
    );
    let trace = qemu::session_trace(&result.log);
    let out = needs::workspace().join("tests/out");
    std::fs::create_dir_all(&out).expect("tests/out");
    let (trace_file, scenarios) =
        (out.join("firmware-session.trace.jsonl"), out.join("firmware-session.scenarios.jsonl"));
    std::fs::write(&trace_file, &trace).expect("write the trace");
    // Every message line is an AgentScope Msg (checked by AgentScope below,
    // through the scenarios' contexts).
    assert!(
        trace.lines().filter(|l| l.starts_with(r#"{"message":{"name":"#)).count() >= DUE.len(),
        "{trace}"
    );

    let replay = std::process::Command::new(sim)
        .arg("replay")
        .arg(&trace_file)
        .arg("--json")
        .arg("--emit-scenarios")
        .arg(&scenarios)
        .output()
        .expect("run envaware-sim replay");
    assert!(replay.status.success(), "replay failed: {}", String::from_utf8_lossy(&replay.stderr));
    let replayed = json_lines(&replay.stdout);
    let device = device_hints(&result.log);
    // The environment steps (before steps 4 and 6) are replayed too.
    let scripted: Vec<&serde_json::Value> =
        replayed.iter().filter(|r| r.get("woken").is_none()).collect();
    assert_eq!(replayed.len(), device.len() + 2, "steps replayed");
    assert_eq!(scripted.len(), device.len(), "steps replayed");
    for (i, (ours, theirs)) in scripted.iter().zip(&device).enumerate() {
        assert_eq!(ours["hint"].as_str(), theirs.as_deref(), "step {i}");
        assert_eq!(ours["event"].as_bool(), Some(theirs.is_some()), "step {i}");
    }
    assert_eq!(device.iter().filter(|h| h.is_some()).count(), 6);
    let fired = watch_fired(&result.log);
    for (i, ours) in scripted.iter().enumerate() {
        let expected = if fired.contains(&i) {
            serde_json::json!(["temperature"])
        } else {
            serde_json::json!([])
        };
        assert_eq!(ours["watch"], expected, "step {i}: the replay's watch: {ours}");
    }

    // AgentScope has no watches: its scenarios carry the readings as extra
    // fields (rendered the same way) and no watch. It must give the
    // device's hint wherever another dimension fired, and none where the
    // watch fired alone.
    let reference_in = out.join("firmware-session.reference.jsonl");
    let emitted = std::fs::read_to_string(&scenarios).expect("read the emitted scenarios");
    let for_reference: String =
        emitted.lines().map(|line| readings_as_extra_fields(line) + "\n").collect();
    std::fs::write(&reference_in, for_reference).expect("write the reference's scenarios");
    let reference = std::process::Command::new(python)
        .arg(needs::workspace().join("tests/reference/reference.py"))
        .arg(&reference_in)
        .output()
        .expect("run reference.py");
    assert!(
        reference.status.success(),
        "reference.py failed: {}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let agentscope = json_lines(&reference.stdout);
    assert_eq!(agentscope.len(), replayed.len(), "AgentScope's results: {agentscope:?}");
    // A hint of the live fields alone: the watch fired alone (the
    // environment steps' and step 9's).
    let watch_only = |hint: &str| {
        hint.lines()
            .filter(|l| l.starts_with('<') && !l.contains("system-reminder>"))
            .all(|l| l.starts_with("<temperature>") || l.starts_with("<uptime>"))
    };
    for (i, (theirs, ours)) in agentscope.iter().zip(&replayed).enumerate() {
        let device = ours["hint"].as_str();
        let expected = device.filter(|h| !watch_only(h));
        assert_eq!(theirs["hint"].as_str(), expected, "step {i}: AgentScope says {theirs}");
        assert_eq!(theirs["event"].as_bool(), Some(expected.is_some()), "step {i}");
    }
}

/// A scenario line for the reference: its `readings` as `extra_fields`
/// (`null`: unavailable) and no `watch`.
fn readings_as_extra_fields(line: &str) -> String {
    let mut s: serde_json::Value = serde_json::from_str(line).expect("a scenario");
    let readings = s.as_object_mut().and_then(|o| o.remove("readings")).unwrap_or_default();
    let extra: serde_json::Map<String, serde_json::Value> = readings
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| "unavailable".into(), Into::into)))
        .collect();
    let injection = &mut s["injection_config"];
    if let Some(o) = injection.as_object_mut() {
        o.remove("watch");
    }
    injection["extra_fields"] = serde_json::Value::Object(extra);
    s.to_string()
}

/// issue 21: `cargo xtask demo --reset-after 4`. The MCU resets after step 4
/// (`SCB::sys_reset`), boots, restores its session from the log it kept in
/// RAM that survives the reset (docs/reboot.md), and runs steps 5 to 9:
/// their hints are byte for byte those of the run without the reset.
#[test]
fn a_reset_after_step_4_restores_the_session_and_the_later_hints_are_the_same() {
    let Some(board) = board() else { return };
    let plain = board.sensor_run();
    let reset = board.run_resetting(&board.elf, true, Some(EPOCH), &TEMPERATURES, Some(4), &[]);
    assert_eq!(reset.status, Some(0), "{}\n{}", reset.log, reset.stderr);
    assert!(reset.finished && reset.steps == DUE.len(), "{reset:?}");
    // Both logs, to compare by hand when this fails.
    let out = needs::workspace().join("tests/out");
    std::fs::create_dir_all(&out).expect("tests/out");
    std::fs::write(out.join("firmware-plain.log"), &plain.log).expect("write the log");
    std::fs::write(out.join("firmware-reset-after-4.log"), &reset.log).expect("write the log");
    assert!(reset.log.contains("resetting the MCU after step 4"), "{}", reset.log);
    // Steps 0 to 4 and the environment step before step 4 wrote a header
    // and 20 events: the operator's 2 messages and the agent's thought, the
    // 6 replies, the results of the 4 replies that called tools (the reply
    // to step 4 ran `OpenVent` before the reset) and the 6 steps (each step
    // item holds its inputs, readings and decision).
    assert!(reset.log.contains("restored 20 events"), "{}", reset.log);
    assert!(!plain.log.contains("INFO  restored"), "{}", plain.log);
    let (before, after) = (device_hints(&plain.log), device_hints(&reset.log));
    // The reset run prints steps 0..=4, then 5..=9 after the reset.
    assert_eq!(after.len(), DUE.len(), "{}", reset.log);
    assert_eq!(after[..5], before[..5]);
    // After the reset, every byte: the board puts its millisecond counter
    // back as it was at the reset (its wall clock is the boot's epoch plus
    // that counter), and the restore stamps the messages it reads back with
    // the times the log gives, so the stream and its work are the same. (The
    // board reads its command line before its tick starts: read in board
    // time, a longer line, with `reset-after`, moved every uptime by a ms.)
    assert_eq!(after[5..], before[5..]);
    // The `read` lines' uptime aside: a restored board has not read its
    // uptime yet when its first step (5, held back by the floor) fires no
    // hint, and streams `""` where the uninterrupted board repeats the
    // last one it read (`8.045 s`).
    let streamed_after = |log: &str| -> Vec<String> {
        let from = log.find("=== step 5").expect("step 5");
        let to = log.find("=== step 9").expect("step 9");
        log[from..to]
            .lines()
            .filter(|l| l.starts_with("agentscope> "))
            .map(|l| match l.split_once(r#","uptime":""#) {
                Some((head, _)) if l.starts_with(r#"agentscope> {"read":"#) => head.to_string(),
                _ => l.to_string(),
            })
            .collect()
    };
    assert_eq!(streamed_after(&reset.log), streamed_after(&plain.log));
    assert!(after[5..].iter().flatten().count() >= 3, "{after:?}");
    assert!(reset.log.contains("session done: 5 steps"), "{}", reset.log);
    replays_from_the_flash_image(&reset, &hints_in_order(&reset.log));
}

/// The device's log (a 32-bit Cortex-M3's), read from its region with the
/// shipped `SessionLog`, passes the host's (64-bit) `Journal::check` for
/// the same session: a context of the firmware's type, with the
/// configuration of `session-config.json`. Its header hash is then the
/// host's, which `Header::for_session` (what `envaware-sim replay`
/// checks) computes from the parts too.
fn the_device_s_log_checks_on_the_host(image: &[u8], session: &Path) {
    use envaware::journal::{Header, ItemKind, ItemReader, Journal};
    use envaware_flashlog::{RamFlash, SessionLog, MAX_ITEM};
    let session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(session).expect("session-config.json"))
            .expect("session-config.json is JSON");
    let mut buf = envaware::ConfigBuf::new();
    buf.load_injection(&session["injection_config"].to_string()).expect("injection_config");
    buf.load_context(&session["context_config"].to_string()).expect("context_config");
    let agent = session["agent_name"].as_str().expect("agent_name");
    let engine = envaware::Engine::new(buf.config()).expect("a valid configuration");
    // firmware/src/agent/session.rs: `Context<'a> = AgentContext<'a, 16, 48, 4096>`.
    let context = envaware::AgentContext::<'_, 16, 48, 4096>::new(&engine, agent);
    let host = Header::of(&context);
    assert_eq!(Header::for_session(&buf.config(), agent, host.capacity), host);
    let (mut journal, mut heads) = (Journal::new(&context), ItemReader::new());
    let mut headers = 0;
    let mut log = SessionLog::new(RamFlash(image.to_vec()));
    let read = embassy_futures::block_on(log.read_items(&mut [0u8; MAX_ITEM], |item| {
        headers += usize::from(heads.read(item)?.kind == ItemKind::Header);
        journal.check(item)
    }))
    .unwrap_or_else(|e| panic!("the host refuses the device's log: {e:?}"));
    assert!(read > 0 && headers > 0, "{read} items, {headers} headers");
}

/// The log's region the board dumped at the end, replayed on the desktop
/// (`envaware-sim replay --flash`, as `cargo xtask demo` saves it): each
/// step the log still holds decided again, and the hints printed are the
/// device's.
fn replays_from_the_flash_image(run: &qemu::RunResult, device: &[Option<String>]) {
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let image = run.flash_log.as_ref().expect("the board dumps its log's region");
    assert_eq!(image.len(), 10 * 1024);
    let out = needs::workspace().join("tests/out");
    std::fs::create_dir_all(&out).expect("tests/out");
    let file = out.join("firmware-flash-log.bin");
    std::fs::write(&file, image).expect("write the image");
    let config = needs::workspace().join("firmware/session-config.json");
    the_device_s_log_checks_on_the_host(image, &config);
    let replay_with = |config: Option<&std::path::Path>| {
        let mut command = std::process::Command::new(&sim);
        command.args(["replay", "--json", "--flash"]).arg(&file);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        command.output().expect("run envaware-sim replay")
    };
    // No --config: the log's header carries the device's configuration.
    let replay = replay_with(None);
    assert!(
        replay.status.success(),
        "replay --flash failed: {}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let given = replay_with(Some(&config));
    assert!(given.status.success(), "{}", String::from_utf8_lossy(&given.stderr));
    assert_eq!(given.stdout, replay.stdout, "--config with the device's configuration");
    // Another configuration is refused before any step, naming both hashes.
    let other = out.join("firmware-other-config.json");
    std::fs::write(&other, r#"{"agent_name": "Sprout", "injection_config": {"timezone": "Europe/Berlin", "time_interval": 0.02}}"#)
        .expect("write a configuration");
    let refused = replay_with(Some(&other));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!((refused.status.code(), refused.stdout.len()), (Some(1), 0), "{said}");
    assert!(
        said.contains("log.config: the log was written under the configuration that hashes to ")
            && said.contains(", but the configuration given with --config hashes to "),
        "{said}"
    );
    let replayed: Vec<Option<String>> =
        json_lines(&replay.stdout).iter().map(|l| l["hint"].as_str().map(str::to_string)).collect();
    // The whole session fits the region (about 1.4 KB of items for its
    // 12 steps): every step replays, the environment's too, each with the
    // hint the device printed.
    assert!(!run.log.contains("the log is compacted"), "{}", run.log);
    assert_eq!(replayed, device);
}

/// Every step's hint, scripted and environment steps in the order the
/// device took them.
fn hints_in_order(log: &str) -> Vec<Option<String>> {
    let mut hints: Vec<Option<String>> = Vec::new();
    let mut inside = None::<String>;
    for line in log.lines() {
        if line.starts_with("=== step ") || line.starts_with("=== environment step ") {
            hints.push(None);
            continue;
        }
        if line.starts_with(qemu::STREAM_PREFIX) || hints.is_empty() {
            continue;
        }
        if line.starts_with("<system-reminder>") {
            inside = Some(String::new());
        }
        if let Some(text) = inside.as_mut() {
            text.push_str(line);
            if line.ends_with("</system-reminder>") {
                *hints.last_mut().expect("a step") = inside.take();
            } else {
                text.push('\n');
            }
        }
    }
    hints
}
