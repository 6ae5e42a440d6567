//! `envaware-sim fuzz --config`: the user's configuration over random
//! sessions; a hint too long for the buffer is shrunk to a trace that
//! `replay` runs to the same `HintTooLong`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim lives in the workspace")
        .to_path_buf()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("envaware-tune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn sim(args: &[&str]) -> (i32, String, String) {
    let out =
        Command::new(SIM).args(args).current_dir(workspace()).output().expect("run envaware-sim");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `HintTooLong { needed: N, capacity: C }` in a text.
fn hint_too_long(text: &str) -> (u64, u64) {
    let rest = text
        .split("HintTooLong { needed: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no HintTooLong in:\n{text}"));
    let needed = rest.split(',').next().unwrap().parse().unwrap();
    let capacity =
        rest.split("capacity: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    (needed, capacity)
}

#[test]
fn a_hint_that_does_not_fit_is_shrunk_to_a_trace_that_replays_to_the_same_hint_too_long() {
    let (trace, svg) = (tmp("overflow.trace.jsonl"), tmp("overflow.svg"));
    let (code, out, err) = sim(&[
        "fuzz",
        "--config",
        "examples/sprout.config.json",
        "--hint-capacity",
        "256",
        // Not cut short: the shrunk trace must not depend on the machine's speed.
        "--shrink-time",
        "86400",
        "--trace-out",
        trace.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}\n{err}");
    // The shrunk session's timeline marks the step whose hint does not fit.
    let picture = std::fs::read_to_string(&svg).expect("the timeline");
    assert_eq!(picture.matches("<title>hint too long at step ").count(), 1, "{picture}");
    let (needed, capacity) = hint_too_long(&out);
    assert_eq!(capacity, 256);
    assert!(needed > 256, "{out}");
    assert!(out.contains("steps in") && out.contains("does not fit"), "{out}");
    let written = std::fs::read_to_string(&trace).expect("the shrunk trace");
    let events = written.lines().filter(|l| !l.starts_with("{\"#\"")).count();
    // config, set_clock, the first user message, and what is needed.
    assert!(events <= 8, "not shrunk: {events} lines\n{written}");

    let (code, out, err) =
        sim(&["replay", trace.to_str().unwrap(), "--hint-capacity", "256", "--json"]);
    assert_eq!(code, 1, "{out}\n{err}");
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let too_long: Vec<&Value> = lines.iter().filter_map(|l| l.get("hint_too_long")).collect();
    assert_eq!(too_long.len(), 1, "{out}");
    assert_eq!(too_long[0], &serde_json::json!({"needed": needed, "capacity": 256}));
    let (_, text, _) = sim(&["replay", trace.to_str().unwrap(), "--hint-capacity", "256"]);
    assert_eq!(hint_too_long(&text), (needed, 256), "{text}");

    // With room for the hint the same trace replays cleanly.
    let (code, out, err) =
        sim(&["replay", trace.to_str().unwrap(), "--hint-capacity", &needed.to_string(), "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("hint_too_long"), "{out}");
}

#[test]
fn the_summary_gives_rates_per_100_steps_and_the_longest_hint() {
    let (code, out, err) = sim(&[
        "fuzz",
        "--config",
        "examples/sprout.config.json",
        "--hint-capacity",
        "4096",
        "--cases",
        "64",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("every hint fits"), "{out}");
    let rates =
        out.lines().find_map(|l| l.strip_prefix("fired per 100 steps: ")).expect("a rates line");
    for dim in ["time", "tasks", "context-length", "tool-error"] {
        let rate: f64 =
            rates.split(", ").find_map(|r| r.strip_prefix(dim)).unwrap().trim().parse().unwrap();
        assert!(rate > 0.0 && rate <= 100.0, "{dim}: {rate} in {out}");
    }
    let longest: usize =
        out.split("longest hint: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let shown: usize =
        out.lines().filter_map(|l| l.strip_prefix("  | ")).map(|l| l.len() + 1).sum::<usize>() - 1;
    assert_eq!(shown, longest, "the longest hint is printed whole:\n{out}");
}

/// `fuzz --config` accepts watches: its sessions read the watched fields,
/// and the summary gives the watch's rate too; a bad watch is named.
#[test]
fn a_configuration_with_a_watch_is_fuzzed_with_readings() {
    let config = tmp("watch.config.json");
    let watch = r#"{"agent_name": "Sprout", "injection_config": {"watch": {"temperature": {"change": 2.0, "above": 28, "hysteresis": 0.5}}}}"#;
    std::fs::write(&config, watch).unwrap();
    let (code, out, err) = sim(&[
        "fuzz",
        "--config",
        config.to_str().unwrap(),
        "--hint-capacity",
        "4096",
        "--cases",
        "32",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rates =
        out.lines().find_map(|l| l.strip_prefix("fired per 100 steps: ")).expect("a rates line");
    let rate: f64 = rates
        .split(", ")
        .find_map(|r| r.strip_prefix("watch"))
        .expect("a watch rate")
        .trim()
        .parse()
        .unwrap();
    assert!(rate > 0.0 && rate <= 100.0, "watch: {rate} in {out}");
    std::fs::write(&config, r#"{"injection_config": {"watch": {"temperature": {"change": 0}}}}"#)
        .unwrap();
    let (code, _, err) = sim(&["fuzz", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("injection_config.watch.temperature.change: must be greater than 0, got 0"),
        "{err}"
    );
}

/// Watches with time rules are fuzzed too: clock moves aim at their
/// intervals, and the summary says how often a heartbeat fired and a
/// change was held back.
#[test]
fn a_configuration_with_time_rules_is_fuzzed_and_their_rates_given() {
    let config = tmp("timed.config.json");
    let timed = r#"{"injection_config": {"time_interval": 24, "watch": {"temperature": {"change": 1.0, "min_interval": 600, "max_interval": "3600"}, "humidity": {"max_interval": 1800.5}}}}"#;
    std::fs::write(&config, timed).unwrap();
    let (code, out, err) = sim(&["fuzz", "--config", config.to_str().unwrap(), "--cases", "48"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rates = out
        .lines()
        .find_map(|l| l.strip_prefix("watch time rules per 100 steps: "))
        .unwrap_or_else(|| panic!("a time rules line in {out}"));
    for (name, rate) in rates.split(", ").map(|r| r.split_once(' ').unwrap()) {
        let rate: f64 = rate.parse().unwrap();
        assert!(rate > 0.0 && rate <= 100.0, "{name}: {rate} in {out}");
    }
    // Without time rules, no such line.
    std::fs::write(&config, r#"{"injection_config": {"watch": {"temperature": {"change": 1}}}}"#)
        .unwrap();
    let (code, out, _) = sim(&["fuzz", "--config", config.to_str().unwrap(), "--cases", "4"]);
    assert_eq!(code, 0);
    assert!(!out.contains("watch time rules"), "{out}");
}

#[test]
fn an_invalid_configuration_is_named() {
    let config = tmp("bad.config.json");
    std::fs::write(&config, r#"{"injection_config": {"tool_retries_limit": 2}}"#).unwrap();
    let (code, _, err) = sim(&["fuzz", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("injection_config.tool_retries_limit"), "{err}");
}

/// `envaware-sim fuzz ... | head` with the reader gone before the summary.
#[test]
fn both_fuzz_modes_survive_a_closed_pipe() {
    for args in [
        &["fuzz", "--cases", "20"][..],
        &["fuzz", "--config", "examples/sprout.config.json", "--cases", "20"],
    ] {
        let mut child = Command::new(SIM)
            .args(args)
            .current_dir(workspace())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run envaware-sim");
        drop(child.stdout.take());
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
    }
}
