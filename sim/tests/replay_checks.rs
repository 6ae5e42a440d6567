//! What `replay` checks of what a trace or a device's log says it did
//! (issue 33): a recorded hint, none included, against the decision; a log
//! header against the configuration replayed with. And what `replay` and
//! `eval` read alike: one configuration loader, and wrong-typed keys named
//! by their path.

use std::path::{Path, PathBuf};
use std::process::Command;

use envaware::journal::{Event, Journal};
use envaware::{AgentContext, Config, Engine, StepInput, TaskCounts, Timestamp, ToolResultState};
use serde_json::{json, Value};

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");
type Context<'a> = AgentContext<'a, 6, 32, 2048>;

/// A device's session log under `config`, as the replay's trace lines
/// (`envaware-sim log`): steps with a hint (the time, a repeated tool
/// error) and steps with none.
fn device_log(config: Config<'_>) -> Vec<String> {
    let engine = Engine::new(config).unwrap();
    let mut context = Context::new(&engine, "Sprout");
    let mut journal = Journal::new(&context);
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let n = journal.start(&context, &mut buf).unwrap();
    let mut log = vec![buf[..n].to_vec()];
    let record = |context: &mut Context<'_>, journal: &mut Journal<6>, event: Event<'_>| {
        let mut buf = [0u8; 512];
        let items = journal.record(context, &event, &mut buf).unwrap();
        items.iter(&buf).map(<[u8]>::to_vec).collect::<Vec<_>>()
    };
    log.extend(record(&mut context, &mut journal, Event::User { name: "operator", text: "" }));
    for i in 0..4u32 {
        let id = format!("c{i}");
        let call = Event::ToolCall { id: &id, name: "OpenVent", input: "{\"vent\": 2}" };
        log.extend(record(&mut context, &mut journal, call));
        let state = ToolResultState::Error;
        log.extend(record(
            &mut context,
            &mut journal,
            Event::ToolResult { id: &id, name: "OpenVent", state },
        ));
        let step = StepInput {
            tasks: TaskCounts::default(),
            cur_iter: u64::from(i),
            input_tokens: 900,
            context_size: 128_000,
        };
        let now = Some(Timestamp::from_unix_seconds(1_784_687_400 + 60 * i64::from(i)));
        let (_, items) =
            journal.step(&mut context, &step, now, &mut (), &mut hint, &mut buf).unwrap();
        log.extend(items.iter(&buf).map(<[u8]>::to_vec));
    }
    let lines = envaware_sim::device_log::trace_lines(&log, None).unwrap();
    lines.lines().map(str::to_string).collect()
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-checks");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `envaware-sim ARGS FILE` on `text`: the exit code, standard output and
/// standard error.
fn sim(args: &[&str], name: &str, text: &str) -> (i32, String, String) {
    let path = tmp(name);
    std::fs::write(&path, text).unwrap();
    let out = Command::new(SIM).args(args).arg(&path).output().expect("run envaware-sim");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Replays a device log of [`Context`]'s capacities.
fn replay_log(name: &str, log: &[String], extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["replay", "--json"];
    args.extend(extra);
    sim(&args, name, &log.join("\n"))
}

/// The positions of the log's steps that appended a hint, and of those
/// that appended none.
fn steps(log: &[String]) -> (Vec<usize>, Vec<usize>) {
    let step = |i: &usize| serde_json::from_str::<Value>(&log[*i]).unwrap().get("step").cloned();
    let with: Vec<usize> =
        (0..log.len()).filter(|i| step(i).is_some_and(|s| s["decided"].is_object())).collect();
    let without: Vec<usize> =
        (0..log.len()).filter(|i| step(i).is_some_and(|s| s["decided"].is_null())).collect();
    assert!(!with.is_empty() && !without.is_empty(), "{log:#?}");
    (with, without)
}

/// `log` with line `i`'s step `decided` set to `decided`.
fn with_decided(log: &[String], i: usize, decided: Value) -> Vec<String> {
    let mut item: Value = serde_json::from_str(&log[i]).unwrap();
    item["step"]["decided"] = decided;
    item["step"]["told"] = json!([]);
    let mut log = log.to_vec();
    log[i] = item.to_string();
    log
}

/// A device's step says what it decided (`decided`, or `null` for
/// nothing): each is decided again, both ways.
#[test]
fn a_step_s_logged_decision_is_checked_both_ways() {
    let log = device_log(Config::default());
    let (code, out, err) = replay_log("device.jsonl", &log, &[]);
    assert_eq!(code, 0, "{err}");
    let (with, without) = steps(&log);
    assert_eq!(out.lines().count(), with.len() + without.len());

    // The device decided nothing where the replay decides the time.
    let silent = with_decided(&log, with[0], Value::Null);
    let (code, _, err) = replay_log("silent.jsonl", &silent, &[]);
    assert_eq!(code, 1, "{err}");
    let line = with[0] + 1;
    assert!(
        err.contains(&format!(
            "line {line}: the device decided null, but the replay decides {{\"time\":true"
        )),
        "{err}"
    );
    // The device decided the time where the replay decides nothing.
    let spoken = with_decided(&log, without[0], json!({"time": true}));
    let (code, _, err) = replay_log("spoken.jsonl", &spoken, &[]);
    assert_eq!(code, 1, "{err}");
    let line = without[0] + 1;
    assert!(
        err.contains(&format!(
            "line {line}: the device decided {{\"time\":true}}, but the replay decides null"
        )),
        "{err}"
    );
}

/// Defect 3: a plain trace's `step.hint` (no log header anywhere) replaced
/// the decision silently.
#[test]
fn a_hint_recorded_in_a_plain_trace_is_checked_against_the_decision() {
    let trace = "{\"set_clock\": \"2026-07-22T02:00:00Z\"}\n{\"user\": \"hi\"}\n";
    let decided = sim(&["replay", "--json"], "plain.jsonl", &format!("{trace}{{\"step\": {{}}}}"));
    assert_eq!(decided.0, 0, "{}", decided.2);
    let hint: Value = serde_json::from_str(decided.1.trim()).unwrap();
    let hint = hint["hint"].as_str().unwrap();

    let forged =
        format!("{trace}{{\"step\": {{\"hint\": \"<system-reminder>forged</system-reminder>\"}}}}");
    let (code, out, err) = sim(&["replay", "--json"], "forged.jsonl", &forged);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("line 3: step.hint records the hint \"<system-reminder>forged</system-reminder>\", but the replay decides the hint \"<system-reminder>"),
        "{err}"
    );
    let silent = format!("{trace}{{\"step\": {{\"hint\": null}}}}");
    let (code, _, err) = sim(&["replay", "--json"], "silent.jsonl", &silent);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("line 3: step.hint records no hint, but the replay decides"), "{err}");
    // The hint the replay decides is accepted as recorded.
    let same = format!("{trace}{}", json!({"step": {"hint": hint}}));
    let (code, out, err) = sim(&["replay", "--json"], "same.jsonl", &same);
    assert_eq!((code, out), (0, decided.1), "{err}");
}

/// Defect 2: the header was not checked at all: a changed hash, a version
/// the core's journal refuses, a log written under another configuration
/// each replayed with exit 0.
#[test]
fn a_log_header_of_another_version_or_configuration_is_refused_naming_both() {
    let log = device_log(Config::default());
    let header: Value = serde_json::from_str(&log[0]).unwrap();
    let hash = header["log"]["config"].as_str().unwrap().to_string();
    let with_header = |log: &[String], key: &str, value: Value| {
        let mut header = header.clone();
        header["log"][key] = value;
        let mut log = log.to_vec();
        log[0] = header.to_string();
        log
    };
    let forged = with_header(&log, "config", json!("0123456789abcdef"));
    let (code, _, err) = replay_log("hash.jsonl", &forged, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "line 1: log.config: the log was written under the configuration that hashes to 0123456789abcdef, but the configuration in the log's settings hashes to {hash} (agent \"Sprout\", a context of 6 messages, 32 blocks, 2048 text bytes)"
        )),
        "{err}"
    );
    let newer = with_header(&log, "version", json!(99));
    let (code, _, err) = replay_log("version.jsonl", &newer, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "line 1: log.version: the log's format is version 99, this replay reads version 3"
        ),
        "{err}"
    );
    // The same log claiming other capacities: another hash.
    let other = with_header(&log, "capacity", json!([16, 48, 4096]));
    let (code, _, err) = replay_log("capacities.jsonl", &other, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a context of 16 messages, 48 blocks, 4096 text bytes"), "{err}");

    // A log written under tool_retries_limit 5 replays under its own
    // settings with no --config, and under the same given; another given
    // is refused before any step, naming both hashes.
    let mut config = Config::default();
    config.injection.tool_retries_limit = 5;
    let five = device_log(config);
    let five_hash: Value = serde_json::from_str(&five[0]).unwrap();
    let five_hash = five_hash["log"]["config"].as_str().unwrap().to_string();
    let (code, out, err) = replay_log("five.jsonl", &five, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 4);
    let config = tmp("five.config.json");
    std::fs::write(&config, r#"{"injection_config": {"tool_retries_limit": 5}}"#).unwrap();
    let (code, given, err) =
        replay_log("five.jsonl", &five, &["--config", config.to_str().unwrap()]);
    assert_eq!((code, given), (0, out), "{err}");
    let defaults = tmp("defaults.config.json");
    std::fs::write(&defaults, "{}").unwrap();
    let (code, out, err) =
        replay_log("five.jsonl", &five, &["--config", defaults.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains(&format!(
            "line 1: log.config: the log was written under the configuration that hashes to {five_hash}, but the configuration given with --config hashes to {hash}"
        )),
        "{err}"
    );
    // A log whose headers carry no settings (written before they did)
    // needs --config.
    let mut bare = five.clone();
    let mut header: Value = serde_json::from_str(&bare[0]).unwrap();
    header["log"].as_object_mut().unwrap().remove("settings");
    bare[0] = header.to_string();
    let (code, _, err) = replay_log("bare.jsonl", &bare, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("the log's headers hold no configuration"), "{err}");
    let (code, _, err) = replay_log("bare.jsonl", &bare, &["--config", config.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
}

/// `eval` on `lines`: each line's result.
fn eval(name: &str, lines: &[String]) -> Vec<Value> {
    let (_, out, err) = sim(&["eval"], name, &lines.join("\n"));
    let results: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(results.len(), lines.len(), "{err}");
    results
}

/// An injection configuration with an unknown key nested `depth` levels.
fn deep_injection(depth: usize) -> String {
    let mut inner = "1".to_string();
    for _ in 0..depth {
        inner = format!("{{\"k\":{inner}}}");
    }
    format!("{{\"timezone\":\"UTC\",\"unknown\":{inner}}}")
}

/// Defect 4: `replay` read a trace line as a `Value` first (serde's 128
/// levels), `eval` hands a configuration's text to the core's loader
/// (1,024 levels): an unknown key 200 levels deep was refused by one and
/// accepted by the other. Both read configurations with one loader now.
#[test]
fn replay_and_eval_accept_the_same_configurations() {
    let now = "2026-07-22T02:00:00Z";
    for depth in [200, 1100] {
        let injection = deep_injection(depth);
        let scenario = format!("{{\"now\":\"{now}\",\"injection_config\":{injection}}}");
        let evaluated = eval("deep.scenario.jsonl", &[scenario]).remove(0);
        let trace = format!(
            "{{\"config\":{{\"injection_config\":{injection}}}}}\n{{\"set_clock\":\"{now}\"}}\n{{\"step\":{{}}}}"
        );
        let (code, out, err) = sim(&["replay", "--json"], "deep.trace.jsonl", &trace);
        let config = tmp("deep.config.json");
        std::fs::write(&config, format!("{{\"injection_config\":{injection}}}")).unwrap();
        let from_file = sim(
            &["replay", "--json", "--now", now, "--config", config.to_str().unwrap()],
            "deep-step.trace.jsonl",
            "{\"step\":{}}",
        );
        match evaluated["error"].as_str() {
            // 200 levels: the same hint.
            None if depth == 200 => {
                assert!(evaluated["hint"].as_str().unwrap().contains("<current-time>"));
                assert_eq!(
                    (code, serde_json::from_str::<Value>(out.trim()).unwrap()),
                    (0, evaluated.clone()),
                    "{err}"
                );
                assert_eq!(from_file.0, 0, "{}", from_file.2);
                assert_eq!(serde_json::from_str::<Value>(from_file.1.trim()).unwrap(), evaluated);
            }
            // Past the loader's 1,024 levels: the same error.
            Some(error) if depth == 1100 => {
                assert!(error.contains("nested deeper than 1024 levels"), "{error}");
                assert_eq!(code, 1);
                assert!(err.contains(&format!("line 1: {error}")), "{err}");
                assert!(from_file.2.contains(&format!("--config: {error}")), "{}", from_file.2);
            }
            _ => panic!("{depth} levels: {evaluated}"),
        }
    }
}

/// Defect 5: a wrong-typed key gave serde's `invalid value: integer …,
/// expected i64 at line 1 column 68`, which does not say which key. Every
/// typed key of a scenario and of a trace names its path, as configuration
/// errors do.
#[test]
fn a_wrong_typed_key_names_its_path() {
    let i64s = "an integer in -9223372036854775808..=9223372036854775807";
    let u64s = "an integer in 0..=18446744073709551615";
    let now = "\"now\": \"2026-07-22T02:00:00Z\"";
    let cases = [
        (
            "\"input_tokens\": 18446744073709551615",
            format!("input_tokens: expected {i64s}, got 18446744073709551615"),
        ),
        ("\"input_tokens\": 1.5", format!("input_tokens: expected {i64s}, got 1.5")),
        ("\"input_tokens\": 1e30", format!("input_tokens: expected {i64s}, got 1e30")),
        ("\"context_size\": \"4096\"", format!("context_size: expected {i64s}, got \"4096\"")),
        ("\"cur_iter\": -1", format!("cur_iter: expected {u64s}, got -1")),
        ("\"agent_name\": 5", "agent_name: expected a string, got 5".into()),
        ("\"tasks\": {}", "tasks: expected a list of tasks, got {}".into()),
        ("\"context\": 5", "context: expected a list of messages, got 5".into()),
        ("\"context_size\": 1, \"context_size\": 2", "context_size: given twice".into()),
        (
            "\"injection_config\": {\"extra_fields\": {\"a\": 5}}",
            "injection_config.extra_fields: expected a string".into(),
        ),
    ];
    let lines: Vec<String> = cases.iter().map(|(key, _)| format!("{{{now}, {key}}}")).collect();
    for (result, (key, error)) in eval("typed.scenario.jsonl", &lines).iter().zip(&cases) {
        assert_eq!(result["error"].as_str(), Some(error.as_str()), "{key}");
    }
    let results = eval("now.scenario.jsonl", &["{\"now\": 5}".into(), "[]".into(), "{}".into()]);
    assert_eq!(results[0]["error"], "now: expected an RFC 3339 time with offset, got 5");
    assert_eq!(results[1]["error"], "invalid scenario: expected a scenario object, got []");
    assert!(results[2]["error"].as_str().unwrap().starts_with("now: missing"), "{}", results[2]);

    let traces = [
        ("{\"step\": {\"tokens\": 1.5}}", format!("line 2: step.tokens: expected {i64s}, got 1.5")),
        (
            "{\"step\": {\"cur_iter\": 1e30}}",
            format!("line 2: step.cur_iter: expected {u64s}, got 1e30"),
        ),
        (
            "{\"step\": {\"hint\": 5}}",
            "line 2: step.hint: expected a string, or null for none, got 5".into(),
        ),
        (
            "{\"tokens\": 18446744073709551615}",
            format!("line 2: tokens: expected {i64s}, got 18446744073709551615"),
        ),
        (
            "{\"config\": {\"input_tokens\": 1.5}}",
            format!("line 2: config.input_tokens: expected {i64s}, got 1.5"),
        ),
        (
            "{\"config\": {\"context_size\": 1e30}}",
            format!("line 2: config.context_size: expected {i64s}, got 1e30"),
        ),
        (
            "{\"config\": {\"agent_name\": [\"Rover\"]}}",
            "line 2: config.agent_name: expected a string, got [\"Rover\"]".into(),
        ),
    ];
    for (event, error) in traces {
        let (code, _, err) =
            sim(&["replay"], "typed.trace.jsonl", &format!("{{\"user\": \"hi\"}}\n{event}"));
        assert_eq!(code, 1, "{event}: {err}");
        assert_eq!(err.trim(), format!("envaware-sim replay: {error}"), "{event}");
    }
}
