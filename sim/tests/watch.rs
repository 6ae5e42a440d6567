//! Environment-change triggers in the sim: the `readings` scenario key for
//! `eval`, the `read` trace event for `replay`, and the `watch` list on a
//! result line only when a watch is configured.

use std::process::Command;

use envaware_sim::scenario::{self, Evaluation};
use serde_json::{json, Value};

fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim lives in the workspace")
        .to_path_buf()
}

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");

fn scenario_line(watch: Option<Value>, readings: Value, context: Value) -> String {
    let mut injection = json!({"time_interval": 24});
    if let Some(w) = watch {
        injection["watch"] = w;
    }
    json!({"agent_name": "Sprout", "now": "2026-07-22T06:00:00Z", "injection_config": injection, "readings": readings, "context": context})
        .to_string()
}

fn told(temperature: &str) -> Value {
    let hint = format!("<current-time>2026-07-22T05:50:00</current-time>\n<temperature>{temperature}</temperature>");
    json!([{"name": "Sprout", "role": "assistant", "content": [
        {"type": "hint", "source": "{\"label\": \"System\", \"sublabel\": \"Runtime State\"}", "hint": hint}]}])
}

#[test]
fn eval_reads_readings_and_says_which_watch_fired_only_when_one_is_configured() {
    let watch = json!({"temperature": {"change": "2.0"}, "door": {"above": 0}});
    let readings = json!({"temperature": "22.3 °C", "door": null, "humidity": "40 %"});
    let line = scenario_line(Some(watch.clone()), readings.clone(), told("20.3 °C"));
    let result = scenario::evaluate(&line).to_json();
    assert_eq!(result["watch"], json!(["temperature"]), "{result}");
    assert_eq!(result["event"], json!(true));
    let hint = result["hint"].as_str().unwrap();
    assert!(
        hint.ends_with("<temperature>22.3 °C</temperature>\n<door>unavailable</door>\n<humidity>40 %</humidity>\n</system-reminder>"),
        "{hint}"
    );
    // 2.0 °C is the change: 22.29 is not.
    let quiet = scenario::evaluate(&scenario_line(
        Some(watch),
        json!({"temperature": "22.29"}),
        told("20.3 °C"),
    ))
    .to_json();
    assert_eq!((quiet["hint"].clone(), quiet["watch"].clone()), (Value::Null, json!([])));
    // No watch: no key, and readings alone fire nothing.
    let plain = scenario::evaluate(&scenario_line(None, readings, told("20.3 °C"))).to_json();
    assert_eq!(plain, json!({"hint": null, "event": false}));
    // A reading that is neither text nor null is an error naming it.
    let Evaluation::Error(e) =
        scenario::evaluate(&scenario_line(None, json!({"door": 1}), json!([])))
    else {
        panic!()
    };
    assert!(e.contains("readings.door: expected a text or null"), "{e}");
    // A bad watch is the core's typed error.
    let Evaluation::Error(e) = scenario::evaluate(&scenario_line(
        Some(json!({"temperature": {"change": -1}})),
        json!({}),
        json!([]),
    )) else {
        panic!()
    };
    assert_eq!(e, "injection_config.watch.temperature.change: must be greater than 0, got -1");
}

/// The example trace fires the watch at the steps the rule says, and
/// `replay --json` agrees with `eval` on its emitted scenarios.
#[test]
fn the_greenhouse_watch_trace_fires_where_the_rule_says() {
    let trace = workspace().join("examples/greenhouse-watch.trace.jsonl");
    let emitted = std::env::temp_dir().join(format!("envaware-watch-{}.jsonl", std::process::id()));
    let out = Command::new(SIM)
        .args(["replay", "--json", "--emit-scenarios"])
        .arg(&emitted)
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let fired: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r["watch"] == json!(["temperature"]))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(fired, [1, 3, 5, 7, 9]);
    assert!(results.iter().all(|r| r["watch"].is_array()));
    let scenarios = std::fs::read_to_string(&emitted).unwrap();
    for (line, result) in scenarios.lines().zip(&results) {
        assert!(line.contains("\"readings\""), "{line}");
        assert_eq!(&scenario::evaluate(line).to_json(), result, "{line}");
    }
    let _ = std::fs::remove_file(&emitted);
    // A `read` that is not an object stops the replay at its line.
    let bad = std::env::temp_dir().join(format!("envaware-watch-bad-{}.jsonl", std::process::id()));
    std::fs::write(&bad, "{\"read\": 5}\n").unwrap();
    let out = Command::new(SIM).args(["replay"]).arg(&bad).output().unwrap();
    let _ = std::fs::remove_file(&bad);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("line 1: read: expected an object of field name to text or null"));
}

/// The timeline gets a watch lane and a panel per watched field, with a
/// mark per reading saying what was told and whether it fired.
#[test]
fn the_timeline_draws_a_watch_lane_and_a_panel_per_watched_field() {
    let trace = workspace().join("examples/greenhouse-watch.trace.jsonl");
    let svg_path = std::env::temp_dir().join(format!("envaware-watch-{}.svg", std::process::id()));
    let out =
        Command::new(SIM).args(["replay", "--plot"]).arg(&svg_path).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let _ = std::fs::remove_file(&svg_path);
    assert!(svg.contains("watch temperature: readings, the value last told"), "no watch panel");
    assert!(svg.contains("height=\"1100\""), "one 240-pixel panel added");
    // The lane marks the five steps that fired.
    assert_eq!(svg.matches("<title>watch at step ").count(), 5);
    // The panel: one mark per available reading (8 of 9 steps), each
    // saying what was told.
    assert_eq!(svg.matches("<title>watch temperature at step ").count(), 8);
    assert!(
        svg.contains("27.6 °C (told 29)</title>"),
        "step 6's reading against the 29 told at step 5, quiet"
    );
    assert!(svg.contains("20.0 °C (nothing told), fired"));
}
