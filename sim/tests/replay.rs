//! `envaware-sim replay` prints the same hints as `eval` on the equivalent
//! scenarios, and (when AgentScope 2.0.11 is at hand) as the reference.
//!
//! Each sample under `examples/` (`*.trace.jsonl`, and the AgentScope
//! `AgentState` dump `*.agentstate.json`) is replayed with `--json
//! --emit-scenarios`; `eval` then runs on the emitted scenarios, and its
//! result lines must equal the replay's, line for line. The readable report
//! must print the same hint texts.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{samples, workspace};

use serde_json::Value;

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");

fn sim(args: &[&str]) -> String {
    let out = Command::new(SIM).args(args).output().expect("run envaware-sim");
    assert!(
        out.status.success(),
        "envaware-sim {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Replays a sample; returns its result lines, and the emitted scenario
/// lines (empty for a step with the clock unset).
fn replay(sample: &Path, extra: &[&str], scenarios: &Path) -> (Vec<Value>, Vec<String>) {
    let mut args = vec![
        "replay",
        "--json",
        "--emit-scenarios",
        scenarios.to_str().unwrap(),
        sample.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let results = json_lines(&sim(&args));
    let emitted = std::fs::read_to_string(scenarios).expect("read the emitted scenarios");
    let emitted: Vec<String> =
        emitted.strip_suffix('\n').unwrap_or(&emitted).split('\n').map(str::to_string).collect();
    assert_eq!(results.len(), emitted.len(), "{}: one scenario line per step", sample.display());
    (results, emitted)
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

#[test]
fn replay_prints_the_same_hints_as_eval_on_the_equivalent_scenarios() {
    let (mut steps, mut hints, mut unset) = (0, 0, 0);
    for (sample, extra) in samples() {
        let name = sample.file_name().unwrap().to_string_lossy().to_string();
        let scenarios = tmp(&format!("{name}.scenarios.jsonl"));
        let (results, emitted) = replay(&sample, &extra, &scenarios);
        assert!(!results.is_empty(), "{name}: no steps");
        let evaluated = json_lines(&sim(&["eval", scenarios.to_str().unwrap()]));
        let mut evaluated = evaluated.into_iter();
        for (i, (result, scenario)) in results.iter().zip(&emitted).enumerate() {
            steps += 1;
            hints += usize::from(result["hint"].is_string());
            if scenario.is_empty() {
                // The clock was unset: no scenario can say so, and no time is told.
                unset += 1;
                assert!(
                    !result["hint"].as_str().unwrap_or("").contains("<current-time>"),
                    "{name} step {}: {result}",
                    i + 1
                );
                continue;
            }
            let e = evaluated.next().unwrap_or_else(|| {
                panic!("{name}: eval printed fewer lines than there are scenarios")
            });
            assert_eq!(result, &e, "{name} step {}: replay and eval differ on\n{scenario}", i + 1);
        }
        assert!(
            evaluated.next().is_none(),
            "{name}: eval printed more lines than there are scenarios"
        );
    }
    eprintln!("{steps} steps replayed, {hints} hints, {unset} with the clock unset");
    assert!(
        hints >= 8 && unset >= 2,
        "the samples should exercise hints and an unset clock ({hints} hints, {unset} unset)"
    );
}

#[test]
fn the_report_prints_the_hints_of_json_mode() {
    for (sample, extra) in samples() {
        let mut args = vec!["replay", sample.to_str().unwrap()];
        args.extend_from_slice(&extra);
        let report = sim(&args);
        let json_args: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
        let results = json_lines(&sim(&json_args));
        // Each step opens with "step N at"; its hint lines are prefixed "  | ".
        let mut printed: Vec<Option<String>> = Vec::new();
        for line in report.lines() {
            if line.starts_with("step ") {
                printed.push(None);
            } else if let Some(text) = line.strip_prefix("  | ") {
                let hint = printed
                    .last_mut()
                    .expect("a hint line follows a step line")
                    .get_or_insert_with(String::new);
                if !hint.is_empty() {
                    hint.push('\n');
                }
                hint.push_str(text);
            }
        }
        let expected: Vec<Option<String>> =
            results.iter().map(|r| r["hint"].as_str().map(str::to_string)).collect();
        assert_eq!(printed, expected, "{}", sample.display());
    }
}

#[test]
fn replayed_hints_match_agentscope_on_the_emitted_scenarios() {
    let Some(python) = xtask::needs::or_skip(xtask::needs::reference_python()) else { return };
    let script = workspace().join("tests/reference/reference.py");
    for (sample, extra) in samples() {
        let name = sample.file_name().unwrap().to_string_lossy().to_string();
        let scenarios = tmp(&format!("{name}.reference.jsonl"));
        let (results, emitted) = replay(&sample, &extra, &scenarios);
        if emitted.iter().any(|s| s.contains("\"watch\":")) {
            continue; // envaware's own watches: the reference has none
        }
        let out =
            Command::new(&python).arg(&script).arg(&scenarios).output().expect("run reference.py");
        assert!(
            out.status.success(),
            "reference.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reference = json_lines(&String::from_utf8(out.stdout).unwrap());
        let ours: Vec<&Value> =
            results.iter().zip(&emitted).filter(|(_, s)| !s.is_empty()).map(|(r, _)| r).collect();
        assert_eq!(
            ours.len(),
            reference.len(),
            "{name}: reference.py wrote {} lines",
            reference.len()
        );
        for (i, (o, r)) in ours.iter().zip(&reference).enumerate() {
            assert_eq!(
                (&o["hint"], &o["event"]),
                (&r["hint"], &r["event"]),
                "{name}: scenario {} differs from AgentScope 2.0.11",
                i + 1
            );
        }
    }
}

#[test]
fn a_trace_line_that_is_not_utf8_stops_the_replay_at_its_line_after_the_steps_before_it() {
    let trace = tmp("not-utf8.trace.jsonl");
    let mut bytes = b"{\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"step\": {}}\n".to_vec();
    bytes.extend_from_slice(b"{\"user\": \"caf\xe9\"}\n{\"step\": {}}\n");
    std::fs::write(&trace, bytes).unwrap();
    let out =
        Command::new(SIM).args(["replay", "--json", trace.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_lines(&String::from_utf8(out.stdout).unwrap()).len(),
        1,
        "the step before the bad line ran"
    );
    assert_eq!(
        String::from_utf8(out.stderr).unwrap().trim(),
        "envaware-sim replay: line 3: not valid UTF-8"
    );
}
