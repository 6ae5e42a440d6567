//! The fuzzer finds nothing wrong with the core, fires every dimension, and
//! catches a rule broken on purpose, shrinking it to a replayable session.

use std::process::Command;

use envaware_sim::fuzz::{self, FuzzOptions};
use envaware_sim::model::{Breakage, Model};
use envaware_sim::scenario::{self, Evaluation};
use serde_json::Value;

fn options(cases: u32, broken: Option<Breakage>) -> FuzzOptions {
    // Shrinking is not cut short here: what it finds must not depend on
    // how fast the machine is.
    FuzzOptions {
        cases,
        seed: 0x5EED,
        steps: 40,
        model: Model { broken },
        shrink_time: fuzz::MAX_SHRINK_TIME,
        ..FuzzOptions::default()
    }
}

#[test]
fn core_and_tracker_agree_with_the_model_and_every_dimension_fires() {
    let report = fuzz::fuzz(&options(400, None)).unwrap();
    if let Some((case, mismatch)) = &report.failure {
        panic!("{}", fuzz::describe(case, mismatch));
    }
    let stats = &report.stats;
    assert_eq!(stats.cases, 400);
    assert!(stats.steps > 2000, "{}", fuzz::summary(stats));
    assert!(stats.silent_dimensions().is_empty(), "{}", fuzz::summary(stats));
    // The situations the rules are subtle about were met too.
    for situation in [
        "elapsed exactly the interval",
        "recorded time in the future",
        "recorded in another zone",
        "compressions",
        // The watches' time rules.
        "watch throttled",
        "watch heartbeat",
        "telling exactly min_interval old",
        "telling exactly max_interval old",
        "telling's created_at a wall time",
        "telling's created_at later than now",
        "telling's created_at unreadable",
        "telling without created_at",
    ] {
        assert!(
            stats.fired.get(situation).copied().unwrap_or(0) > 0,
            "{situation} never met:\n{}",
            fuzz::summary(stats)
        );
    }
}

/// The hint and event (and, with a watch, the fired watches) a scenario
/// line's `eval` gives, and the model's.
fn eval_and_expected(line: &str) -> (Value, Value) {
    let Evaluation::Hint { hint, event, watch, .. } = scenario::evaluate(line) else {
        panic!("eval rejects the written scenario: {line}")
    };
    let written: Value = serde_json::from_str(line).unwrap();
    let mut got = serde_json::json!({"hint": hint, "event": event});
    if let Some(watch) = watch {
        got["watch"] = serde_json::json!(watch);
    }
    (got, written["expected"].clone())
}

fn assert_caught(broken: Breakage) {
    assert_caught_as(broken, "hint differs");
}

/// `broken` is caught, shrunk, and the mismatch says `what`.
fn assert_caught_as(broken: Breakage, what: &str) {
    let report = fuzz::fuzz(&options(500, Some(broken))).unwrap();
    let (case, mismatch) = report.failure.unwrap_or_else(|| panic!("{broken:?} went unnoticed"));
    let described = fuzz::describe(&case, &mismatch);
    // Shrunk: a handful of events, not the tens generated.
    assert!(case.events().len() <= 4, "not shrunk:\n{described}");
    assert!(mismatch.message.contains(what), "{described}");
    // The written session replays through `eval`: every step agrees with the
    // model but the last, where the broken rule shows.
    let (last, earlier) = mismatch.scenarios.split_last().expect("at least the mismatching step");
    for line in earlier {
        let (got, expected) = eval_and_expected(line);
        assert_eq!(got, expected, "{described}");
    }
    let (got, expected) = eval_and_expected(last);
    assert_ne!(got, expected, "{described}");
}

#[test]
fn a_strict_time_boundary_is_caught_with_a_shrunk_session() {
    assert_caught(Breakage::TimeBoundaryStrict);
}

#[test]
fn a_tool_error_rule_ignoring_arguments_is_caught() {
    assert_caught(Breakage::ToolErrorIgnoresArguments);
}

#[test]
fn a_throttle_that_holds_back_at_exactly_min_interval_is_caught() {
    // The step's hint is there for the time anyway: the fired watches differ.
    assert_caught_as(Breakage::ThrottleInclusive, "differ: core Dims");
}

/// Every written step, replayed through `eval`, gets the model's result:
/// the scenario lines carry all the model read (hints' `created_at` too).
#[test]
fn every_emitted_step_evals_to_the_models_result() {
    let dir = std::env::temp_dir().join(format!("envaware-fuzz-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let emitted = dir.join("steps.jsonl");
    let report =
        fuzz::fuzz(&FuzzOptions { emit: Some(emitted.clone()), ..options(80, None) }).unwrap();
    assert!(report.failure.is_none());
    let text = std::fs::read_to_string(&emitted).unwrap();
    let mut with_created_at = 0;
    for line in text.lines() {
        let (got, expected) = eval_and_expected(line);
        assert_eq!(got, expected, "{line}");
        with_created_at += usize::from(line.contains("\"created_at\""));
    }
    assert!(with_created_at > 100, "only {with_created_at} steps with a created_at");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_command_line_fuzzes_and_writes_a_session_eval_replays() {
    let bin = env!("CARGO_BIN_EXE_envaware-sim");
    let dir = std::env::temp_dir().join(format!("envaware-fuzz-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("mismatch.jsonl");

    let ok = Command::new(bin)
        .args(["fuzz", "--cases", "60", "--seed", "3", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{stdout}{}", String::from_utf8_lossy(&ok.stderr));
    assert!(stdout.starts_with("fuzz: 60 cases, "), "{stdout}");
    for dimension in fuzz::DIMENSIONS {
        assert!(stdout.contains(dimension), "{stdout}");
    }
    assert!(!out.exists());

    let failed = Command::new(bin)
        .args(["fuzz", "--cases", "200", "--broken", "time-boundary", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("minimal session"), "{stdout}");
    let replay = Command::new(bin).arg("eval").arg(&out).output().unwrap();
    assert!(replay.status.success());
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(String::from_utf8_lossy(&replay.stdout).lines().count(), written.lines().count());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The model is checked against AgentScope 2.0.11 itself: every step of the
/// generated sessions (bar strict mode, envaware's own) gets the hint the
/// real `_inject_runtime_state` produces. Watches are envaware's own too:
/// AgentScope is given the live readings as extra fields (rendered the same
/// way) and no watch, and a step where the watch fired alone is skipped.
#[test]
fn the_model_agrees_with_agentscope() {
    let Some(python) = xtask::needs::or_skip(xtask::needs::reference_python()) else { return };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::temp_dir().join(format!("envaware-fuzz-ref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let emitted = dir.join("steps.jsonl");
    let report =
        fuzz::fuzz(&FuzzOptions { emit: Some(emitted.clone()), ..options(120, None) }).unwrap();
    assert!(report.failure.is_none());
    let for_reference = dir.join("reference.jsonl");
    let lines: String = std::fs::read_to_string(&emitted)
        .unwrap()
        .lines()
        .map(|l| readings_as_extra_fields(l) + "\n")
        .collect();
    std::fs::write(&for_reference, lines).unwrap();
    let out = Command::new(python)
        .arg(root.join("tests/reference/reference.py"))
        .arg(&for_reference)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let scenarios = std::fs::read_to_string(&emitted).unwrap();
    let results = String::from_utf8(out.stdout).unwrap();
    assert_eq!(scenarios.lines().count(), results.lines().count());
    let mut compared = 0;
    for (scenario, result) in scenarios.lines().zip(results.lines()) {
        let scenario: Value = serde_json::from_str(scenario).unwrap();
        if scenario.pointer("/injection_config/strict") == Some(&Value::Bool(true)) {
            continue;
        }
        let result: Value = serde_json::from_str(result).unwrap();
        let expected = &scenario["expected"];
        let watch_fired = expected["watch"].as_array().is_some_and(|w| !w.is_empty());
        if watch_fired && result["hint"].is_null() {
            continue; // the watch alone fired: AgentScope has none
        }
        assert_eq!(
            (&result["hint"], &result["event"]),
            (&expected["hint"], &expected["event"]),
            "AgentScope and the model differ on\n{scenario}"
        );
        compared += 1;
    }
    assert!(compared > 300, "only {compared} steps compared");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scenario for AgentScope: `readings` as extra fields after the
/// configured ones (a key already there keeps its place; `null`:
/// unavailable), no `watch`, and no hint's `created_at` (only the watches'
/// time rules read it; AgentScope's own may refuse an unreadable one).
fn readings_as_extra_fields(line: &str) -> String {
    let mut s: Value = serde_json::from_str(line).unwrap();
    for msg in s["context"].as_array_mut().into_iter().flatten() {
        for block in msg["content"].as_array_mut().into_iter().flatten() {
            if let Some(b) = block.as_object_mut() {
                b.remove("created_at");
            }
        }
    }
    let readings = s.as_object_mut().and_then(|o| o.remove("readings")).unwrap_or_default();
    let injection = &mut s["injection_config"];
    if let Some(o) = injection.as_object_mut() {
        o.remove("watch");
    }
    if let Some(readings) = readings.as_object() {
        if !injection["extra_fields"].is_object() {
            injection["extra_fields"] = serde_json::json!({});
        }
        for (k, v) in readings {
            injection["extra_fields"][k] =
                Value::String(v.as_str().unwrap_or("unavailable").to_string());
        }
    }
    s.to_string()
}
