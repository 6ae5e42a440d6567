//! The watch time rules through `eval`, as `../shared/scenario-format.md`
//! ("Time rules") specifies them: `created_at` on context hint blocks in
//! its three forms, throttled changes, heartbeats, and the configuration's
//! errors naming their path.

use envaware_sim::scenario::{self, Evaluation};
use serde_json::{json, Value};

/// A scenario at 06:00:00Z with the temperature read at `reading`, told
/// `told` by a hint whose `created_at` is `created_at` (absent when `None`).
fn eval(watch: Value, reading: &str, created_at: Option<&str>, zone: &str) -> Value {
    let mut hint = json!({"type": "hint", "source": "{\"label\": \"System\", \"sublabel\": \"Runtime State\"}",
        "hint": "<current-time>2026-07-22T05:50:00</current-time>\n<temperature>23.0 °C</temperature>"});
    if let Some(at) = created_at {
        hint["created_at"] = json!(at);
    }
    let line = json!({"agent_name": "Sprout", "now": "2026-07-22T06:00:00Z",
        "injection_config": {"time_interval": 24, "timezone": zone, "watch": {"temperature": watch}},
        "readings": {"temperature": reading},
        "context": [{"name": "Sprout", "role": "assistant", "content": [hint]}]})
    .to_string();
    scenario::evaluate(&line).to_json()
}

fn fired(result: &Value) -> bool {
    assert!(result.get("error").is_none(), "{result}");
    result["watch"] == json!(["temperature"])
}

#[test]
fn a_change_sooner_than_min_interval_is_held_back_and_told_after_it() {
    let floor = json!({"change": 1, "min_interval": 600});
    // Told 5 minutes ago: 25.0 moved 2 °C, held back.
    assert!(!fired(&eval(floor.clone(), "25.0 °C", Some("2026-07-22T05:55:00Z"), "UTC")));
    // Told exactly 10 minutes ago: the floor has passed (age >= min_interval).
    assert!(fired(&eval(floor.clone(), "25.0 °C", Some("2026-07-22T05:50:00Z"), "UTC")));
    // A microsecond short of it: still held back.
    assert!(!fired(&eval(floor.clone(), "25.0 °C", Some("2026-07-22T05:50:00.000001Z"), "UTC")));
    // Unknown age (none, unreadable, later than now): never held back.
    for at in [None, Some("yesterday"), Some("2026-07-22T06:00:00.000001Z")] {
        assert!(fired(&eval(floor.clone(), "25.0 °C", at, "UTC")), "{at:?}");
    }
    // No change: nothing to hold back, nothing fires.
    assert!(!fired(&eval(floor, "23.5 °C", Some("2026-07-22T05:00:00Z"), "UTC")));
}

#[test]
fn a_steady_reading_is_told_again_at_max_interval_or_when_the_age_is_unknown() {
    let heartbeat = json!({"max_interval": "1800"});
    let at = |t: &str| Some(format!("2026-07-22T{t}"));
    let steady = |created: Option<String>| {
        fired(&eval(heartbeat.clone(), "23.0 °C", created.as_deref(), "UTC"))
    };
    assert!(!steady(at("05:30:00.000001Z")));
    assert!(steady(at("05:30:00Z")));
    assert!(steady(at("07:30:00+02:00"))); // the same instant with an offset
    assert!(!steady(at("08:00:00+02:00"))); // 06:00Z: age 0
    assert!(steady(None));
    assert!(steady(at("06:00:01Z"))); // later than now: unknown
                                      // An unavailable reading never fires, heartbeat or not.
    assert!(!fired(&eval(heartbeat, "unavailable", None, "UTC")));
}

#[test]
fn a_created_at_with_no_offset_is_read_on_the_configured_zone_s_wall_clock() {
    let heartbeat = json!({"max_interval": 1800});
    // 06:00Z is 08:00 in Berlin (summer): 07:30 there is 30 minutes old.
    assert!(fired(&eval(heartbeat.clone(), "23 °C", Some("2026-07-22T07:30:00"), "Europe/Berlin")));
    assert!(!fired(&eval(
        heartbeat.clone(),
        "23 °C",
        Some("2026-07-22T07:30:00.5"),
        "Europe/Berlin"
    )));
    // The same text on UTC's wall clock is in the future: unknown, fires.
    assert!(fired(&eval(heartbeat.clone(), "23 °C", Some("2026-07-22T07:30:00.5"), "UTC")));
    assert!(!fired(&eval(heartbeat, "23 °C", Some("2026-07-22T05:45:00"), "UTC")));
}

#[test]
fn time_rule_errors_name_their_path() {
    for (watch, message) in [
        (json!({"min_interval": 0}), "injection_config.watch.temperature.min_interval: expected seconds"),
        (json!({"max_interval": "1e9"}), ""),
        (json!({"max_interval": 1000000001}), "injection_config.watch.temperature.max_interval: expected seconds"),
        (json!({"min_interval": "0.0000001"}), "injection_config.watch.temperature.min_interval: expected seconds"),
        (json!({"min_interval": 0.000001}), ""),
        (json!({"min_interval": true}), "injection_config.watch.temperature.min_interval: expected seconds"),
        (json!({"min_interval": 60, "max_interval": 60}), "injection_config.watch.temperature.min_interval: must be less than max_interval (60), got 60"),
        (json!({"min_interval": 61.5, "max_interval": "60"}), "injection_config.watch.temperature.min_interval: must be less than max_interval (60), got 61.5"),
    ] {
        let result = eval(watch.clone(), "23 °C", None, "UTC");
        match message {
            "" => assert!(result.get("error").is_none(), "{watch}: {result}"),
            m => {
                let error = result["error"].as_str().unwrap_or_default();
                assert!(error.contains(m), "{watch}: {error}");
            }
        }
    }
    // Either alone is a valid watch; the result still lists it.
    let Evaluation::Hint { watch, .. } = scenario::evaluate(
        &json!({"now": "2026-07-22T06:00:00Z", "injection_config": {"watch": {"t": {"min_interval": 5}}},
            "readings": {"t": "1"}}).to_string(),
    ) else {
        panic!("a watch with min_interval alone is valid")
    };
    assert_eq!(watch, Some(vec!["t".to_string()]));
}
