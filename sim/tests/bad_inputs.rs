//! Hostile inputs to `fuzz` and `eval` (issue 18): every option has a
//! range and out of range is an error naming it; what `eval` accepts,
//! `fuzz --config` accepts; a closed pipe is not an error; a JSON error
//! names its input line; tasks are read small; shrinking stops at its bound.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use envaware_sim::fuzz::{self, FuzzOptions};
use envaware_sim::model::{Breakage, Model};
use envaware_sim::scenario::{self, Evaluation};
use serde_json::{json, Value};

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim lives in the workspace")
        .to_path_buf()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("envaware-bad-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn sim(args: &[&str]) -> (i32, String, String) {
    let out =
        Command::new(SIM).args(args).current_dir(workspace()).output().expect("run envaware-sim");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn every_fuzz_number_out_of_range_is_an_error_naming_the_option_and_its_range() {
    let config = "examples/sprout.config.json";
    let cases: [(&[&str], &str, &str); 7] = [
        (&["fuzz", "--steps", "18446744073709551615"], "--steps", "1..=100000"),
        (&["fuzz", "--steps", "4294967296"], "--steps", "1..=100000"),
        (&["fuzz", "--steps", "0"], "--steps", "1..=100000"),
        (&["fuzz", "--cases", "0"], "--cases", "1..=1000000"),
        (&["fuzz", "--shrink-time", "0"], "--shrink-time", "0.001..=86400"),
        (
            &["fuzz", "--config", config, "--hint-capacity", "100000000000"],
            "--hint-capacity",
            "1..=1048576",
        ),
        (&["fuzz", "--config", config, "--hint-capacity", "0"], "--hint-capacity", "1..=1048576"),
    ];
    for (args, option, range) in cases {
        let (code, _, err) = sim(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(option) && err.contains(range), "{args:?}: {err}");
        assert!(!err.contains("panicked") && !err.contains("memory allocation"), "{args:?}: {err}");
    }
}

#[test]
fn the_library_refuses_what_the_command_line_refuses() {
    let too_many = FuzzOptions { steps: fuzz::MAX_STEPS + 1, ..FuzzOptions::default() };
    assert_eq!(
        fuzz::fuzz(&too_many).unwrap_err().to_string(),
        "steps: 100001 is not in 1..=100000"
    );
    let never = FuzzOptions { shrink_time: Duration::ZERO, ..FuzzOptions::default() };
    assert!(fuzz::fuzz(&never).unwrap_err().to_string().starts_with("shrink time: 0 s is not in"));
}

/// A configuration `eval` accepts is one `fuzz --config` runs: an interval
/// no clock reaches is aimed at with the longest move.
#[test]
fn fuzz_config_runs_every_interval_eval_accepts() {
    for interval in [json!("inf"), json!(1.7e308), json!(1e9)] {
        let config = json!({"injection_config": {"time_interval": interval}});
        let scenario =
            json!({"now": "2026-07-22T02:30:00Z", "injection_config": config["injection_config"]});
        assert!(
            matches!(scenario::evaluate(&scenario.to_string()), Evaluation::Hint { .. }),
            "eval refuses {interval}"
        );
        let path = tmp(&format!("interval-{}.json", interval.to_string().replace('"', "")));
        std::fs::write(&path, config.to_string()).unwrap();
        let (code, out, err) =
            sim(&["fuzz", "--config", path.to_str().unwrap(), "--cases", "20", "--steps", "60"]);
        assert_eq!(code, 0, "{interval}: {out}{err}");
        assert!(out.starts_with("fuzz --config: 20 sessions"), "{out}");
    }
}

#[test]
fn eval_into_a_closed_pipe_exits_zero() {
    let mut child = Command::new(SIM)
        .arg("eval")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // More output than a pipe holds, so eval writes after the reader left.
    let feeder = std::thread::spawn(move || {
        for _ in 0..20_000 {
            if stdin.write_all(b"{\"now\": \"2026-07-22T02:30:00Z\"}\n").is_err() {
                break;
            }
        }
    });
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("\"hint\""), "{first}");
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_json_error_names_its_input_line_and_column() {
    let mut child =
        Command::new(SIM).arg("eval").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let input = "{\"now\": \"2026-07-22T02:30:00Z\"}\n\n{\"now\": ,}\n{\"now\": \"2026-07-22T02:30:00Z\", \"context\": [5]}\n";
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(lines[1]["error"], "invalid scenario: expected value at line 3 column 9");
    assert_eq!(lines[2]["error"], "context[0].role: expected a string");
}

/// Tasks are read small, and read as before: only a task's type and its
/// last `state` count, whatever else it holds.
#[test]
fn tasks_read_small_count_as_before() {
    let at = |tasks: Value| {
        let line = json!({"now": "2026-07-22T02:30:00Z", "tasks": tasks}).to_string();
        match scenario::evaluate(&line) {
            Evaluation::Hint { hint, .. } => hint.unwrap_or_default(),
            Evaluation::Error(e) => format!("error: {e}"),
        }
    };
    let plain = at(json!([{"state": "pending"}, {"state": "in_progress"}, {}]));
    assert!(plain.contains("<tasks>"), "{plain}");
    let padded = at(
        json!([{"id": [1, {"a": [2]}], "state": "pending"}, {"state": "in_progress", "x": {"y": "z"}}, {"z": null}]),
    );
    assert_eq!(padded, plain);
    let dup = r#"{"now": "2026-07-22T02:30:00Z", "tasks": [{"state": "completed", "state": "pending"}, {"state": "in_progress"}, {}]}"#;
    assert!(
        matches!(scenario::evaluate(dup), Evaluation::Hint { hint: Some(h), .. } if h == plain),
        "the last state wins"
    );
    assert!(at(json!([{"state": ["pending"]}])).starts_with("error: tasks[0].state"));
}

/// A broken model over long sessions: shrinking is cut at its bound and
/// reports the (still failing) session it has.
#[test]
fn shrinking_stops_at_its_bound_and_reports_what_it_has() {
    let options = FuzzOptions {
        cases: 300,
        steps: 300,
        model: Model { broken: Some(Breakage::TimeBoundaryStrict) },
        shrink_time: Duration::from_millis(1),
        ..FuzzOptions::default()
    };
    let report = fuzz::fuzz(&options).unwrap();
    let (case, mismatch) = report.failure.expect("the broken rule is caught");
    assert!(report.shrink_cut.is_some(), "shrinking was not cut");
    assert!(mismatch.message.contains("hint differs"), "{}", fuzz::describe(&case, &mismatch));

    let trace = tmp("cut.trace.jsonl");
    let (code, out, err) = sim(&[
        "fuzz",
        "--config",
        "examples/sprout.config.json",
        "--hint-capacity",
        "64",
        "--steps",
        "200",
        "--shrink-time",
        "0.001",
        "--trace-out",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("shrinking stopped at its bound"), "{out}");
    // What it has is still a session whose hint does not fit.
    let (code, _, err) = sim(&["replay", trace.to_str().unwrap(), "--hint-capacity", "64"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("longer than 64 bytes"), "{err}");
}

/// `eval` reads a context small, message by message and block by block;
/// what it reads is what [`scenario::parse_context`] reads from whole
/// `Value`s, errors included.
#[test]
fn a_context_read_small_reads_as_the_whole_value() {
    let whole = |line: &str| -> Evaluation {
        let v: Value = serde_json::from_str(line).unwrap();
        let conversation = match scenario::parse_context(v["context"].as_array().unwrap()) {
            Ok(c) => c,
            Err(e) => return Evaluation::Error(e),
        };
        let buf = scenario::SimConfigBuf::with_capacity();
        let engine = envaware::Engine::new(buf.config()).unwrap();
        let step = envaware::Step {
            agent_name: "Friday",
            tasks: Default::default(),
            cur_iter: 0,
            input_tokens: 0,
            context_size: 128_000,
        };
        let mut clock =
            envaware::FixedClock::at(scenario::parse_now("2026-07-22T02:30:00Z").unwrap());
        scenario::run_step(
            &engine,
            &conversation,
            &step,
            &mut clock,
            &mut scenario::Readings::default(),
        )
    };
    let hint = r#"{"type": "hint", "source": "{\"label\": \"System\", \"sublabel\": \"Runtime State\"}", "hint": "<current-time>2026-07-22T02:10:00</current-time>", "extra": [1, {"a": 2}]}"#;
    let failed = r#"{"type": "tool_call", "id": "c1", "name": "Bash", "input": "{}"}, {"type": "tool_result", "id": "c1", "name": "Bash", "state": "error", "output": [1, 2]}"#;
    let contexts = [
        format!(r#"[{{"name": "Friday", "role": "assistant", "metadata": {{"x": [1, 2]}}, "content": [{hint}]}}]"#),
        format!(r#"[{{"name": "Friday", "role": "assistant", "content": [{failed}, {failed}, {failed}]}}]"#),
        format!(r#"[{{"name": "Friday", "role": "assistant", "content": "text", "content": [{hint}]}}]"#),
        format!(r#"[{{"name": "Friday", "role": "assistant", "content": [{hint}], "content": "text"}}]"#),
        r#"[{"name": "u", "role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "hint", "hint": "x"}]}]"#.into(),
        r#"[{"name": "u", "role": "user", "content": 5}]"#.into(),
        r#"[{"name": ["u"], "role": "user", "content": []}]"#.into(),
        r#"[{"name": "u", "role": "robot", "content": []}]"#.into(),
        r#"["message", 5, null]"#.into(),
        r#"[[{"role": "user"}]]"#.into(),
        r#"[{"name": "Friday", "role": "assistant", "content": [{"type": "tool_result", "id": 5}]}]"#.into(),
    ];
    for context in contexts {
        let line = format!(
            r#"{{"now": "2026-07-22T02:30:00Z", "agent_name": "Friday", "context": {context}}}"#
        );
        assert_eq!(scenario::evaluate(&line), whole(&line), "{context}");
    }
}
